package relayclient

import (
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Ledger is what the delivery ledger (modules/ledger, issue 40) is told by
// the client: every event published and how it was answered, every
// subscription's life, every event that arrived. A Sink that also has
// a `Ledger() Ledger` method (LedgerSource) hands one to the connections
// and HTTP clients it is given to; nil turns it off. Calls come from
// connection readers and must not block.
type Ledger interface {
	// Sent: ev is about to be written by a client of community (the
	// Target's Host, "" for the relay's one community), over via ("ws"
	// or "http").
	Sent(ev *nostr.Event, community, via string, at time.Time)
	// Settled: the publish of event id (hex) was answered, accepted or not
	// (a timeout, a refusal or the connection's end is not accepted).
	Settled(id string, accepted bool, at time.Time)
	// Open: recipient (hex pubkey) sent REQ sub with filters; nil when
	// the ledger does not judge such a subscription.
	Open(recipient, community, sub string, filters []Filter) SubLedger
	// Seen: recipient read event ev other than live: a subscription's
	// stored events before EOSE, a /query answer (a recovery when the live
	// delivery was missed).
	Seen(recipient string, ev *nostr.EventView, at time.Time)
	SeenID(recipient, id string, at time.Time)
}

// SubLedger is one subscription in the ledger.
type SubLedger interface {
	Live(at time.Time)                           // its EOSE arrived
	Ended(at time.Time, byClient bool)           // it ended: our CLOSE, the relay's CLOSED, the connection's end
	Delivered(ev *nostr.EventView, at time.Time) // a live event arrived on it
}

// LedgerSource is a Sink that carries the run's delivery ledger.
type LedgerSource interface {
	Ledger() Ledger
}

// LedgerOf is sink's ledger, nil when it has none.
func LedgerOf(sink Sink) Ledger {
	return sourceOf(sink, func(s Sink) (Ledger, bool) {
		if src, ok := s.(LedgerSource); ok {
			return src.Ledger(), true
		}
		return nil, false
	})
}

// Wrapper is a Sink that passes Results on to another one (the models'
// stop and grace sinks): what the inner sink carries — the ledger, the
// watcher — is found through it.
type Wrapper interface {
	Unwrap() Sink
}

// sourceOf is the first of sink and the sinks it wraps that get answers
// for; the zero T when none does.
func sourceOf[T any](sink Sink, get func(Sink) (T, bool)) T {
	for sink != nil {
		if v, ok := get(sink); ok {
			return v
		}
		w, ok := sink.(Wrapper)
		if !ok {
			break
		}
		sink = w.Unwrap()
	}
	var zero T
	return zero
}
