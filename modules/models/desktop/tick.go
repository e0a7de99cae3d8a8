// The model's clock-driven rules: on a wake, the reconnect after a backoff,
// the probe's answer window, the tick (probe a silent socket, replace due
// channel subscriptions, the roster and repair backstops; the legacy tick
// rereads everything) and the renewal (docs/desktop-requests.md §6). Like
// the rest of Model, they read no clock: the time comes in the event.

package desktop

import "time"

func (m *Model) wake(e Wake) {
	m.noteFrame(e.LastFrame)
	at := e.At
	if m.state == stateWaiting && !at.Before(m.reconnectAt) {
		m.connect(m.kind)
	}
	m.reopenDue(at)
	if m.probe != "" && !at.Before(m.probeAt.Add(m.p.ProbeWindow)) {
		if m.lastFrame.After(m.probeAt) {
			m.probe = ""
		} else {
			m.sessionFailed(at) // no frame within the answer window
		}
	}
	if !at.Before(m.nextTick) {
		m.tick(at)
		for !m.nextTick.After(at) {
			m.nextTick = m.nextTick.Add(m.p.Tick)
		}
	}
	if m.p.Renewal > 0 && !at.Before(m.nextRenewal) {
		if m.state == stateConnected {
			m.endSession(at)
			m.connect(connRenewal)
		}
		for !m.nextRenewal.After(at) {
			m.nextRenewal = m.nextRenewal.Add(m.p.Renewal)
		}
	}
}

func (m *Model) tick(at time.Time) {
	defer func() { m.lastTick = at }()
	if m.state != stateConnected {
		return
	}
	if !m.lastFrame.After(m.lastTick) && m.probe == "" {
		// silent since the previous tick: probe the socket
		m.probeAt = at
		m.probe = m.open(SubSpec{Op: OpProbe, Route: RouteMembership, Since: at.Unix(), LiveOnly: true, Probe: true}, -1, roleProbe, "")
	}
	if m.p.Mode == ModeLegacy {
		m.replaceChannels(func(*routeState) bool { return true })
		if m.membershipSettled() { // as below
			m.read(Read{Key: ReadKey{Kind: ReadRoster}})
			m.repair(true, at)
		}
		return
	}
	due := func(last time.Time) bool { return last.IsZero() || at.Sub(last) >= m.p.Backstop }
	// Each route counts its backstop from its own last replacement, so one
	// that missed its EOSE retries at the next tick even when a sibling's
	// succeeded.
	m.replaceChannels(func(r *routeState) bool { return due(r.lastReplaced) })
	if !m.membershipSettled() {
		// The membership route's EOSE establishes the roster and the
		// unread repair (establish); a tick before it would read them
		// twice (audit desktop.md, issue 41 item 12).
		return
	}
	if m.rosterOwed || due(m.lastRoster) {
		m.read(Read{Key: ReadKey{Kind: ReadRoster}})
	}
	switch {
	case m.snapshotOwed || due(m.lastFullRepair):
		m.repair(true, at)
	case m.repairOwed:
		m.repair(false, at)
	}
}

// replaceChannels replaces each kept-open channel subscription that is
// due by a live-only REQ of the same channels and since; the old one is
// closed when the new one reaches EOSE.
func (m *Model) replaceChannels(due func(*routeState) bool) {
	for i := range m.routes {
		r := &m.routes[i]
		if (r.Kind != RouteBatch && r.Kind != RouteLive) || !r.settled || r.sub == "" || r.replacing != "" || !due(r) {
			continue
		}
		r.replacing = m.open(SubSpec{Op: OpLiveEOSE, Route: r.Kind, Channels: r.Channels, Since: r.since, LiveOnly: true}, i, roleReplacement, r.sub)
	}
}

// membershipSettled: this connection's membership subscription has its
// EOSE (or its failure) in, or the model has none.
func (m *Model) membershipSettled() bool {
	for _, r := range m.routes {
		if r.Kind == RouteMembership {
			return r.settled
		}
	}
	return true
}
