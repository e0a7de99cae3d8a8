// Package metrics is the data side of the runner: metric definitions, tag
// sets, samples, bounded-memory sinks, sub-metrics, grouped sinks and the
// ingest path that feeds them. It has no JavaScript in it.
//
// # Pieces
//
//   - Registry: create-or-get of metrics by name (k6's name rule,
//     ^[a-zA-Z_][a-zA-Z0-9_]{1,128}$), with an error when a name is reused with
//     another type or value type. RegisterBuiltins declares k6's built-in
//     metrics (spec §5) in one place.
//   - TagSet: an immutable, sorted set of key/value pairs with a precomputed
//     hash; copying one is copying a pointer, comparing is a hash check plus
//     (rarely) a pair walk.
//   - Sample: {Metric, Tags, Metadata, Time, Value}.
//   - Sink: CounterSink (sum; rate over the run duration), GaugeSink (last,
//     min, max), RateSink (passes/total) and TrendSink (an HDR histogram).
//   - Selector: a sub-metric selector `metric{k:v,...}` parsed with k6's rules.
//   - Collector: the ingest path. Producers record samples through a Buffer
//     (one per VU or per goroutine that owns it) or through Collector.Add
//     (sharded, for any goroutine). Samples are batched and aggregated into
//     sinks in batches, so the hot path is an append under an uncontended
//     mutex. Flush drains every buffer; Snapshot flushes and deep-copies the
//     sinks for threshold evaluation (every 2 s), the summary and reports.
//   - Snapshot: a serialisable copy of all sinks. Snapshots written by several
//     instances merge exactly (Snapshot.Merge), which `buzzload merge` uses.
//
// # Trend precision
//
// A TrendSink records values as integers of one millionth of the metric's
// unit (so a time Trend, in milliseconds, records nanoseconds) into a sparse
// HDR histogram with 2 significant digits and a range of 1 to 1e18 units
// (1e12 ms, about 31 years, for time; negative values go into a mirrored
// histogram). Nanoseconds are the natural floor of Go's clock, and the range
// covers anything from a cache hit to a 12-hour soak with room to spare. The
// sparse (packed) histogram grows with the number of distinct buckets hit,
// not with the number of samples, so memory stays flat however long the run
// is; a Trend spread over 1 ms..10 s holds at most ~1,700 buckets (~14 KB),
// so a run-long series stops growing sooner (the 2½-hour soak's HDR growth
// after the warm-up fell from 2.2 MB at 3 digits to 0.38 MB; docs/benchmarks.md).
// count, min and max are exact; the sum is an exact 128-bit integer of units,
// so avg is exact to 1e-6 of the unit and merging is associative;
// percentiles follow k6's linear interpolation over the sorted values, with
// each value read as the middle of its bucket (relative error below 1/256,
// 0.4 %) and clamped to the exact min and max. A Trend also keeps its first 512
// values as they are; while it holds no more than that (short runs, small
// groups, tests) its percentiles are exactly k6's.
//
// # Concurrency
//
// Registry, Collector, Buffer and TagSet are safe for concurrent use. Sinks
// and snapshots are plain values: not safe for concurrent mutation.
package metrics
