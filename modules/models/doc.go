// Package models holds the client models of the Buzz load generator: the
// shared activity schedule (Schedule, Activity), the basic human, the
// driver of the agent (its rules are the pure model in modules/models/agent),
// the hot-thread author and the connection pacer. The desktop-app model lives in
// modules/models/desktop and runs Activity beside its own subscriptions.
//
// A Client is one global index of a scenario. Session runs one session of
// it (connect, work, end) and says how it ended; the k6/x/buzz extension
// runs one session per iteration, Run loops sessions for plain Go callers.
// Every operation is reported through a relay.Sink under buzz-loadgen's
// names (connect, auth, publish, subscribe_eose, history, deliver,
// http_query, http_events, hot_reply, thread_fetch, turn_context).
//
// Conventions the clients follow (the data-shape ones live in
// modules/scenario, so seed and modules/models/desktop share them):
//   - Timed messages carry ["buzzload_sent", "<unix µs>"]
//     (scenario.SentAtTag); a live subscriber records deliver = arrival −
//     send time.
//   - Seeded deep-thread roots carry scenario.RootMarker(run_id) in their
//     content (scenario.ThreadRootContent), the hot root
//     scenario.HotRootMarker(run_id) (scenario.HotRootContent); clients find
//     them with a NIP-50 search for that word in the channel.
//   - Thread replies (humans, turn replies, hot replies) are first-level
//     replies under the root: a single ["e", root, "", "reply"] tag.
package models
