package relay

import "sync/atomic"

// Stats is a snapshot of the relay's counters since Start: what a load
// test wants to compare with the generator's own view (accepted events,
// deliveries, slow-consumer drops, throttles, auth failures).
type Stats struct {
	Connections       int64 // WebSocket connections open now
	ConnectionsTotal  int64 // accepted upgrades
	AuthOK            int64 // successful NIP-42 AUTHs
	AuthFailed        int64 // refused AUTHs
	EventsAccepted    int64 // EVENTs (WS and HTTP) answered accepted, duplicates included
	EventsRejected    int64 // EVENTs refused (not counting throttles)
	Throttled         int64 // frames and HTTP calls refused by a rate limit
	Deliveries        int64 // live events queued to subscribers
	DroppedDeliveries int64 // live events dropped on a full send queue
	SlowConsumers     int64 // connections dropped as slow consumers
	HTTPRequests      int64 // bridge and /buzz/v1 requests
	HTTPAuthFailed    int64 // NIP-98 refusals (401)
	REQs              int64 // REQ frames read (whatever the answer)
}

type counters struct {
	connsTotal, authOK, authFailed, accepted, rejected, throttled atomic.Int64
	deliveries, dropped, slow, httpRequests, httpAuthFailed       atomic.Int64
	reqs, authTimeouts                                            atomic.Int64
	fam                                                           families // metrics.go
}

// Stats returns the current counters.
func (r *Relay) Stats() Stats {
	c := &r.stats
	return Stats{
		Connections: r.conns.Load(), ConnectionsTotal: c.connsTotal.Load(),
		AuthOK: c.authOK.Load(), AuthFailed: c.authFailed.Load(),
		EventsAccepted: c.accepted.Load(), EventsRejected: c.rejected.Load(), Throttled: c.throttled.Load(),
		Deliveries: c.deliveries.Load(), DroppedDeliveries: c.dropped.Load(), SlowConsumers: c.slow.Load(),
		HTTPRequests: c.httpRequests.Load(), HTTPAuthFailed: c.httpAuthFailed.Load(),
		REQs: c.reqs.Load(),
	}
}

// count records an ingest outcome.
func (c *counters) count(res ingestResult) {
	switch {
	case res.throttled:
		c.throttled.Add(1)
	case res.accepted:
		c.accepted.Add(1)
	default:
		c.rejected.Add(1)
	}
}
