package desktop

import (
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
)

type connState uint8

const (
	stateIdle connState = iota
	stateConnecting
	stateConnected
	stateWaiting // backing off before a reconnect
	stateStopped
)

type connKind uint8

const (
	connCold      connKind = iota // first connection
	connReconnect                 // after a failure, a session end, or a legacy renewal
	connRenewal                   // current renewal: routes carried
)

type subRole uint8

const (
	rolePrimary subRole = iota
	roleReplacement
	roleProbe
)

type subRec struct {
	spec     SubSpec
	route    int // index in Model.routes; -1 for the probe
	role     subRole
	replaces string
	sent     bool
	sentAt   time.Time
	settled  bool
	live     bool // reached its EOSE in time: a live subscription since
}

// routeState is a route with what the model knows about it. Continuity
// (caughtUp) outlives connections; the rest is per connection.
type routeState struct {
	Route
	caughtUp     bool // this connection's EOSE arrived in time
	prevCaughtUp bool // ...and the previous connection's
	settled      bool // this connection's EOSE (or its failure) is in
	held         bool // current renewal: continuous, establishment held back
	sub          string
	replacing    string
	since        int64
	lastReplaced time.Time // its kept-open subscription's last (re)placement: the backstop counts from it
	retryAt      time.Time // a throttled subscription is sent again then (zero: none waits)
}

// Model is the desktop client's decisions as a state machine (events and
// actions are in events.go, the wake, tick and renewal rules in tick.go):
// Step takes
// an event and returns the actions it causes. It reads no clock and opens
// no socket, so every rule is testable with plain values; the driver turns
// actions into requests and results back into events. Not safe for
// concurrent use.
type Model struct {
	p      Params
	routes []routeState
	reads  *ReadQueue
	out    []Action

	state       connState
	kind        connKind // kind of the connection being opened or up
	epoch       int
	subSeq      int
	subs        map[string]*subRec
	setupQ      []string
	pending     int  // REQs sent and awaiting EOSE (probe excluded)
	carry       bool // current renewal not yet cut: continuous routes are held
	start       time.Time
	sessionAt   time.Time // when the current connection came up
	prevEnd     time.Time // when the previous session ended
	since       int64     // this connection's since
	attempts    int       // consecutive failures, for the backoff
	coldDone    bool      // names and sidebar read: once, on the first successful connection
	reconnectAt time.Time

	nextTick, nextRenewal time.Time
	lastTick, lastFrame   time.Time
	probe                 string
	probeAt               time.Time

	// current-mode backstops and debts
	lastRoster, lastFullRepair           time.Time
	rosterOwed, repairOwed, snapshotOwed bool
	profileOwed                          [3]bool // profiles, statuses, emoji
}

// NewModel returns the model of one client. It does nothing until Start.
func NewModel(p Params) (*Model, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	p.defaults()
	m := &Model{p: p, reads: NewReadQueue(p.MaxReads), subs: map[string]*subRec{}}
	for _, r := range PlanRoutes(p.Mode, len(p.Channels), p.Presence, p.LiveOnlyScope) {
		m.routes = append(m.routes, routeState{Route: r})
	}
	return m, nil
}

// Connected reports whether a connection is up.
func (m *Model) Connected() bool { return m.state == stateConnected }

// NextWake is when the next timer is due (zero before Start and after Stop).
func (m *Model) NextWake() time.Time {
	if m.state == stateIdle || m.state == stateStopped {
		return time.Time{}
	}
	w := m.nextTick
	if m.p.Renewal > 0 && m.nextRenewal.Before(w) {
		w = m.nextRenewal
	}
	if m.state == stateWaiting && m.reconnectAt.Before(w) {
		w = m.reconnectAt
	}
	if m.probe != "" && m.probeAt.Add(m.p.ProbeWindow).Before(w) {
		w = m.probeAt.Add(m.p.ProbeWindow)
	}
	if m.state == stateConnected {
		for _, r := range m.routes {
			if !r.retryAt.IsZero() && r.retryAt.Before(w) {
				w = r.retryAt
			}
		}
	}
	return w
}

// Step applies ev and returns the actions it causes, in order.
func (m *Model) Step(ev Event) []Action {
	m.out = nil
	if m.state == stateStopped {
		return nil
	}
	var at time.Time
	switch e := ev.(type) {
	case Start:
		at = e.At
		if m.state == stateIdle {
			m.begin(e.At)
		}
	case Connected:
		at = e.At
		if e.Epoch == m.epoch && m.state == stateConnecting {
			m.connected(e.At)
		}
	case ConnectFailed:
		at = e.At
		if e.Epoch == m.epoch && m.state == stateConnecting {
			m.attempts++
			m.waitAndReconnect(e.At)
		}
	case Disconnected:
		at = e.At
		if e.Epoch == m.epoch && m.state == stateConnected {
			if e.Lease {
				m.endSession(e.At) // a healthy session: no backoff, reconnect now
				m.connect(connReconnect)
			} else {
				m.sessionFailed(e.At)
			}
		}
	case EOSE:
		at = e.At
		m.eose(e)
	case SubFailed:
		at = e.At
		m.subFailed(e.Sub, e.At)
	case SubClosed:
		at = e.At
		rec := m.subs[e.Sub]
		switch {
		case rec == nil || rec.route < 0 || rec.role != rolePrimary || m.routes[rec.route].sub != e.Sub || m.state != stateConnected:
		case strings.HasPrefix(e.Reason, "rate-limited:"):
			// A throttle is not a failure: the route subscribes again
			// after the relay's `retry in Ns`, jittered (issue 41 item 4,
			// as the basic human and the agent do).
			m.retryRoute(rec, e.At, relayclient.RetryIn(e.Reason))
		case rec.live:
			// Any other CLOSED on a live route ends the session, as for
			// the basic human.
			m.sessionFailed(e.At)
		}
	case ReadSettled:
		at = e.At
		m.readSettled(e)
	case Wake:
		at = e.At
		m.wake(e)
	case SessionEnd:
		at = e.At
		if m.state == stateConnected {
			m.endSession(e.At)
			m.connect(connReconnect)
		}
	case Stop:
		m.emit(Disconnect{})
		m.state = stateStopped
		return m.out
	}
	m.pump(at)
	return m.out
}

func (m *Model) emit(a Action) { m.out = append(m.out, a) }

// retryRoute forgets rec's throttled subscription and has its route
// subscribe again after wait (at least a second) plus up to half of it.
func (m *Model) retryRoute(rec *subRec, at time.Time, wait time.Duration) {
	wait = max(wait, time.Second)
	if m.p.Jitter != nil {
		wait += time.Duration(m.p.Jitter() * float64(wait/2))
	}
	r := &m.routes[rec.route]
	if !rec.settled {
		m.settle(rec) // frees its setup slot
	}
	delete(m.subs, r.sub)
	r.sub, r.retryAt = "", at.Add(wait)
}

// reopenDue subscribes again the throttled routes whose wait is over.
func (m *Model) reopenDue(at time.Time) {
	if m.state != stateConnected {
		return
	}
	for i := range m.routes {
		r := &m.routes[i]
		if r.retryAt.IsZero() || at.Before(r.retryAt) {
			continue
		}
		r.retryAt = time.Time{}
		r.sub = m.open(SubSpec{Op: r.Kind.Op(), Route: r.Kind, Channels: r.Channels, Since: r.since,
			LiveOnly: !r.Kind.Replays()}, i, rolePrimary, "")
	}
}

// cutAtOpen: the live-only channel subscription is always cut, and so is a
// replaying route the previous connection never caught up.
func (r *routeState) cutAtOpen() bool {
	return r.Kind == RouteLive || (r.Kind.Replays() && !r.prevCaughtUp)
}

func (m *Model) open(spec SubSpec, route int, role subRole, replaces string) string {
	m.subSeq++
	spec.ID = "live-" + strconv.Itoa(m.subSeq)
	rec := &subRec{spec: spec, route: route, role: role, replaces: replaces}
	m.subs[spec.ID] = rec
	if role == roleProbe {
		rec.sent = true
		m.emit(OpenSub{Spec: spec})
		return spec.ID
	}
	m.setupQ = append(m.setupQ, spec.ID)
	return spec.ID
}

// pump sends queued REQs while fewer than MaxSetup await their EOSE.
func (m *Model) pump(at time.Time) {
	for m.state == stateConnected && m.pending < m.p.MaxSetup && len(m.setupQ) > 0 {
		id := m.setupQ[0]
		m.setupQ = m.setupQ[1:]
		rec := m.subs[id]
		if rec == nil {
			continue
		}
		rec.sent, rec.sentAt = true, at
		m.pending++
		m.emit(OpenSub{Spec: rec.spec})
	}
}

func (m *Model) noteFrame(at time.Time) {
	if at.After(m.lastFrame) {
		m.lastFrame = at
	}
}

// settle marks rec's EOSE wait over and frees its setup slot.
func (m *Model) settle(rec *subRec) {
	rec.settled = true
	if rec.role != roleProbe && rec.sent {
		m.pending--
	}
}

func (m *Model) eose(e EOSE) {
	rec := m.subs[e.Sub]
	if rec == nil || rec.settled || !rec.sent {
		return
	}
	m.noteFrame(e.At)
	sent := rec.sentAt
	if !e.Sent.IsZero() {
		sent = e.Sent
	}
	if rec.role != roleProbe && e.At.After(sent.Add(m.p.EOSETimeout)) {
		// judged by arrival: an EOSE after its deadline is a timeout
		m.subFailed(e.Sub, e.At)
		return
	}
	m.settle(rec)
	rec.live = true
	switch rec.role {
	case roleProbe:
		m.emit(CloseSub{ID: e.Sub})
	case roleReplacement:
		r := &m.routes[rec.route]
		m.emit(CloseSub{ID: rec.replaces}) // new REQ first, then CLOSE of the old
		delete(m.subs, rec.replaces)
		r.sub, r.replacing = e.Sub, ""
		r.lastReplaced = e.At
	case rolePrimary:
		m.routeCaughtUp(rec.route, e.Count, e.At)
	}
}

func (m *Model) subFailed(id string, at time.Time) {
	rec := m.subs[id]
	if rec == nil || rec.settled || !rec.sent {
		return
	}
	m.settle(rec)
	switch rec.role {
	case roleProbe:
		// the answer window decides, by any frame
	case roleReplacement:
		// closed; the batch it would have replaced stays and the next tick retries
		r := &m.routes[rec.route]
		m.emit(CloseSub{ID: id})
		delete(m.subs, id)
		r.replacing = ""
	case rolePrimary:
		r := &m.routes[rec.route]
		r.settled, r.caughtUp = true, false
		if r.Kind == RouteReplay {
			m.emit(CloseSub{ID: id})
			r.sub = ""
		}
		if r.Kind == RoutePresence || m.p.Mode == ModeLegacy {
			return
		}
		// a missed deadline is a cut: the route is recovered now, and the
		// next connection cannot resume or carry it (caughtUp stays false)
		m.arrive(rec.route, true, at)
	}
}

func (m *Model) routeCaughtUp(i, count int, at time.Time) {
	r := &m.routes[i]
	r.settled, r.caughtUp = true, true
	if r.Kind == RouteReplay {
		m.emit(CloseSub{ID: r.sub})
		r.sub = ""
	}
	if r.Kind == RoutePresence || m.p.Mode == ModeLegacy {
		return // presence establishes nothing; legacy read everything at connect
	}
	cut := r.Kind == RouteLive || count >= ReplayLimit || !r.prevCaughtUp
	m.arrive(i, cut, at)
}

// arrive establishes route i by its replay outcome. During a current
// renewal continuous routes are held back: nothing is read while every
// replay keeps continuity; the first cut establishes every held route as
// on a reconnect, and every later one as it arrives.
func (m *Model) arrive(i int, cut bool, at time.Time) {
	if m.carry {
		if !cut {
			m.routes[i].held = true
			return
		}
		m.carry = false
		for j := range m.routes {
			if m.routes[j].held {
				m.routes[j].held = false
				m.establish(j, false, at)
			}
		}
	}
	m.establish(i, cut, at)
}

var profileReads = [3]ReadKind{ReadProfiles, ReadStatuses, ReadEmoji}

func (m *Model) establish(i int, cut bool, at time.Time) {
	r := &m.routes[i]
	switch r.Kind {
	case RouteProfiles:
		// continuous: profiles read nothing unless a read is still owed
		for j, k := range profileReads {
			if cut || m.profileOwed[j] {
				m.read(Read{Key: ReadKey{Kind: k}})
			}
		}
	case RouteMembership:
		if cut {
			m.read(Read{Key: ReadKey{Kind: ReadRoster}})
			m.repair(true, at)
			m.read(Read{Key: ReadKey{Kind: ReadReminders}})
			return
		}
		// continuous: only repair unreads, with the snapshot only when
		// an earlier snapshot read failed
		m.repair(m.snapshotOwed, at)
	case RouteBatch, RouteReplay:
		m.recoverChannels(r.Channels)
	}
}

// recoverChannels reads the windows and threads that live in chs (nil: all).
func (m *Model) recoverChannels(chs []int) {
	in := func(c int) bool {
		if chs == nil {
			return true
		}
		for _, x := range chs {
			if x == c {
				return true
			}
		}
		return false
	}
	for w := 0; w < m.p.windowCount(); w++ {
		if in(WindowChannel(w)) {
			m.read(Read{Key: ReadKey{Kind: ReadWindow, Index: w}})
			m.read(Read{Key: ReadKey{Kind: ReadNotices, Index: w}})
		}
	}
	for t := 0; t < m.p.threadCount(); t++ {
		if in(ThreadChannel(t, len(m.p.Channels))) {
			m.read(Read{Key: ReadKey{Kind: ReadThread, Index: t}})
		}
	}
}

func (m *Model) read(r Read) bool {
	start, taken := m.reads.Add(r)
	for _, s := range start {
		m.emit(StartRead{Read: s})
	}
	return taken
}

// repair asks for an unread repair; a full one (with the snapshot) starts
// the backstop of the next full one. A full repair that cannot be taken
// because a covered one is running stays owed.
func (m *Model) repair(snapshot bool, at time.Time) {
	key := ReadKey{Kind: ReadUnread}
	if m.read(Read{Key: key, Snapshot: snapshot}) {
		if snapshot {
			m.lastFullRepair = at
		}
		return
	}
	if snapshot {
		if running, ok := m.reads.running[key]; ok && !running.Snapshot {
			m.snapshotOwed = true
		}
	}
}

func (m *Model) readSettled(e ReadSettled) {
	running, ok := m.reads.running[e.Read]
	if !ok {
		return
	}
	switch e.Read.Kind {
	case ReadRoster:
		m.rosterOwed = !e.OK
		if e.OK {
			m.lastRoster = e.At
		}
	case ReadUnread:
		m.repairOwed = !e.OK
		if running.Snapshot {
			m.snapshotOwed = !e.SnapshotOK
		}
	case ReadProfiles:
		m.profileOwed[0] = !e.OK
	case ReadStatuses:
		m.profileOwed[1] = !e.OK
	case ReadEmoji:
		m.profileOwed[2] = !e.OK
	}
	for _, s := range m.reads.Settle(e.Read) {
		m.emit(StartRead{Read: s})
	}
}
