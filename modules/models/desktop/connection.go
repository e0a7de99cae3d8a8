package desktop

// The connection's life: the first connect, renewals and reconnects with
// their backoff, a session's end, and what a fresh connection subscribes
// to and reads (split from model.go, whose events and routes these serve).

import "time"

func (m *Model) begin(at time.Time) {
	m.start = at
	m.lastTick = at
	m.nextTick = at.Add(m.p.Tick)
	if m.p.Renewal > 0 {
		m.nextRenewal = at.Add(time.Duration(m.p.RenewalPhase * float64(m.p.Renewal)))
	}
	m.connect(connCold)
}

func (m *Model) connect(k connKind) {
	if k == connRenewal && m.p.Mode == ModeLegacy {
		k = connReconnect // a legacy renewal is an ordinary reconnect
	}
	m.kind = k
	m.epoch++
	m.state = stateConnecting
	m.emit(Connect{Epoch: m.epoch, NIP11: k != connRenewal, Renewal: k == connRenewal})
}

// endSession closes the current connection on our side: a renewal or the
// human's session end, a healthy session however short it was, so the
// backoff restarts (audit desktop.md #105: after five minutes of 25 s
// renewals one drop waited 8 s).
func (m *Model) endSession(at time.Time) {
	m.closeSession(at)
	m.attempts = 0
}

// closeSession ends the connection; a failed session restarts the backoff
// only if it lasted HealthySession.
func (m *Model) closeSession(at time.Time) {
	m.prevEnd = at
	if at.Sub(m.sessionAt) >= HealthySession {
		m.attempts = 0
	}
	m.dropConnection()
	m.emit(Disconnect{})
}

func (m *Model) sessionFailed(at time.Time) {
	m.closeSession(at)
	m.attempts++
	m.waitAndReconnect(at)
}

func (m *Model) waitAndReconnect(at time.Time) {
	m.state = stateWaiting
	m.kind = connReconnect
	m.reconnectAt = at.Add(m.backoff())
}

// backoff is BackoffBase doubled per consecutive failure, capped, and with
// Jitter drawn from the upper half of that.
func (m *Model) backoff() time.Duration {
	d := m.p.BackoffBase
	for i := 1; i < m.attempts && d < m.p.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, m.p.BackoffMax)
	if m.p.Jitter != nil {
		d = d/2 + time.Duration(m.p.Jitter()*float64(d/2))
	}
	return d
}

func (m *Model) dropConnection() {
	m.subs = map[string]*subRec{}
	m.setupQ = nil
	m.pending = 0
	m.carry = false
	m.probe = ""
	for i := range m.routes {
		r := &m.routes[i]
		r.sub, r.replacing, r.held = "", "", false
	}
}

// ResumeSince is the since of every subscription of a connection: 300 s
// before the client started on a cold start, and on a resumed connection
// 960 s before the previous session ended but not before that.
func ResumeSince(start, prevEnd time.Time, cold bool) int64 {
	floor := start.Add(-ColdStartBack).Unix()
	if cold {
		return floor
	}
	return max(prevEnd.Add(-ResumeBack).Unix(), floor)
}

func (m *Model) connected(at time.Time) {
	m.state = stateConnected
	m.sessionAt = at
	m.since = ResumeSince(m.start, m.prevEnd, m.kind == connCold)
	m.carry = m.kind == connRenewal
	for i := range m.routes {
		r := &m.routes[i]
		r.prevCaughtUp, r.caughtUp = r.caughtUp, false
		r.settled, r.held, r.replacing = false, false, ""
		r.since, r.retryAt = m.since, time.Time{}
		if r.lastReplaced.IsZero() {
			// The replacement backstop runs from the last replacement
			// (the PR), not from every connect: with renewals shorter
			// than the backstop a connect-restarted one never fired
			// (audit desktop.md #72). The first connection starts it.
			r.lastReplaced = at
		}
		if m.carry && r.cutAtOpen() {
			m.carry = false
		}
		r.sub = m.open(SubSpec{Op: r.Kind.Op(), Route: r.Kind, Channels: r.Channels, Since: m.since,
			LiveOnly: !r.Kind.Replays()}, i, rolePrimary, "")
	}
	// Names and sidebar belong to the first successful connection, which
	// a failed first attempt makes a reconnect (audit desktop.md #46).
	cold := !m.coldDone
	m.coldDone = true
	if m.p.Mode == ModeLegacy {
		// legacy makes every read as it connects (names and sidebar on a
		// cold start only).
		if cold {
			m.read(Read{Key: ReadKey{Kind: ReadMetadata}})
			m.read(Read{Key: ReadKey{Kind: ReadSidebar}})
		}
		m.read(Read{Key: ReadKey{Kind: ReadRoster}})
		m.read(Read{Key: ReadKey{Kind: ReadProfiles}})
		m.read(Read{Key: ReadKey{Kind: ReadStatuses}})
		m.read(Read{Key: ReadKey{Kind: ReadEmoji}})
		m.repair(true, at)
		m.read(Read{Key: ReadKey{Kind: ReadReminders}})
		m.recoverChannels(nil)
		return
	}
	if cold {
		m.read(Read{Key: ReadKey{Kind: ReadMetadata}})
		m.read(Read{Key: ReadKey{Kind: ReadSidebar}})
	}
}
