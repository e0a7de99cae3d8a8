// Package relayclient is the measuring relay client every Buzz client model uses:
// WebSocket (NIP-01 framing, NIP-42 AUTH, publish→OK, REQ→EOSE, live
// events, COUNT) and HTTP (NIP-98 signed bridge, operator and /buzz/v1
// calls). Every operation is timed and classified (ok, error, throttled,
// pending) exactly as the relay speaks, and reported as a Result to a Sink.
//
// The package knows nothing about any runner: the extension wires a Sink to
// the engine's metrics, tests use relayclienttest.CollectSink.
package relayclient

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/buzzload/buzzload/modules/nostr"

	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// Outcome classifies one operation.
type Outcome uint8

// The outcomes. Throttled and pending are not failures: a quota rejection is
// the relay working as configured, and a pending operation has not failed yet.
const (
	OutcomeOK        Outcome = iota // the relay accepted / answered
	OutcomeError                    // anything else, including admission unavailable and saturation
	OutcomeThrottled                // HTTP 429 or "rate-limited: quota exceeded"
	OutcomePending                  // still in flight when it was cut short (our Close, context cancelled)
)

func (o Outcome) String() string {
	switch o {
	case OutcomeOK:
		return "ok"
	case OutcomeError:
		return "error"
	case OutcomeThrottled:
		return "throttled"
	case OutcomePending:
		return "pending"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result is one timed operation.
type Result struct {
	Op       string        // operation name: connect, auth, publish, subscribe_eose, http_query, ...
	Start    time.Time     // when the operation started (monotonic reading included)
	Duration time.Duration // until it settled
	Outcome  Outcome       //
	// Refused: the relay answered and refused (an OK false, an HTTP error
	// status, a refusal in the body); false for timeouts, cuts and our own
	// errors. Throttles are refusals too.
	Refused bool
	// Idempotent: a refusal an idempotent seed counts as the success it is
	// (the unit exists), so the relay did not accept this event.
	Idempotent    bool
	Error         string        // why it is not ok: trimmed, quoting what arrived; never a secret
	BytesSent     int64         // payload bytes written for this operation
	BytesReceived int64         // payload bytes read for this operation
	RetryAfter    time.Duration // for throttles: the relay's "retry in Ns" or Retry-After, else 0
	// Due is when the client's schedule wanted the operation to start (zero
	// when it was not scheduled): Start−Due is how late it was sent, and
	// Start+Duration−Due the latency a person waiting on the schedule sees
	// (coordinated omission, issue 14).
	Due time.Time
	// Event is a publish's event (WebSocket EVENT, HTTP /events), whatever
	// its outcome (OutcomeOK: the relay acknowledged it); nil for every
	// other Result. A sink may keep what it needs of it (the durability
	// audit keeps the ids of acknowledged ones and of the others).
	Event *nostr.Event
}

// Sink receives every Result. Implementations must be safe for concurrent
// use and must not block: Record is called from connection reader goroutines.
type Sink interface {
	Record(Result)
}

// NopSink drops every Result.
type NopSink struct{}

// Record implements Sink.
func (NopSink) Record(Result) {}

// SinkFunc adapts a function to Sink (as http.HandlerFunc does). Unreachable
// from the binary (deadcode), kept: the adapter plain-Go users and the
// example (example_test.go) record with.
type SinkFunc func(Result)

// Record implements Sink.
func (f SinkFunc) Record(r Result) { f(r) }

var (
	_ Sink = NopSink{}
	_ Sink = SinkFunc(nil)
)

// Relay reason prefixes that decide an outcome (docs/buzz-protocol.md §1.8, §2.2).
const (
	throttlePrefix = "rate-limited:"
)

// Classify maps a relay reason carried by OK false, CLOSED or NOTICE to an
// outcome: every "rate-limited:" reason is a throttle, the relay refusing
// for capacity, with its text kept and "retry in Ns" parsed into the
// duration — the quota ("quota exceeded"), the shared admission store
// ("shared admission unavailable"), handler saturation ("too many
// concurrent requests") and the per-agent observer-frame rate ("observer
// frame rate exceeded"); every other reason is an error. An OK true is
// always ok ("duplicate:" and "info:" included) and never reaches Classify.
func Classify(reason string) (Outcome, time.Duration) {
	if strings.HasPrefix(reason, throttlePrefix) {
		return OutcomeThrottled, RetryIn(reason)
	}
	return OutcomeError, 0
}

// IsDuplicate reports whether a relay reason is NIP-01's "duplicate:"
// prefix (Buzz: "duplicate: reaction already exists" with OK false).
func IsDuplicate(reason string) bool { return strings.HasPrefix(reason, "duplicate:") }

// RetryIn parses the relay's "retry in <N>s" suffix; 0 when absent or malformed.
func RetryIn(reason string) time.Duration {
	const marker = "retry in "
	i := strings.Index(reason, marker)
	if i < 0 {
		return 0
	}
	rest := reason[i+len(marker):]
	j := 0
	for j < len(rest) && j < 9 && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	if j == 0 || j >= len(rest) || rest[j] != 's' {
		return 0
	}
	n, err := strconv.Atoi(rest[:j])
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Second
}

// quote is how every error quotes what arrived (wire.Quote: the start of
// b, cut on a rune boundary).
func quote(b []byte) string { return wire.Quote(b) }

func trimBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	// Cut on a rune boundary so the quote shows whole characters.
	for k := 0; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); k++ {
		n--
	}
	return b[:n]
}

// trimReason bounds a relay-provided text (OK/CLOSED/NOTICE reason) for Result.Error.
func trimReason(s string) string {
	if len(s) <= 200 {
		return s
	}
	return string(trimBytes([]byte(s), 200)) + "…"
}
