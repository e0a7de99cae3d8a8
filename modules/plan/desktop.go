package plan

import (
	"time"

	"github.com/buzzload/buzzload/modules/models/desktop"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// epoch anchors the desktop model's wall clock: offsets in the plan are
// times after it.
var epoch = time.Unix(1_800_000_000, 0)

func wall(d time.Duration) time.Time   { return epoch.Add(d) }
func offset(t time.Time) time.Duration { return t.Sub(epoch) }

// desk is a desktop human: desktop.Model makes every decision (routes,
// ticks, renewals, reads) and the shared activity runs on each of its
// connections, as desktop.Human does. The plan plays the relay: every
// connect succeeds, every REQ reaches its EOSE after replaying what the
// relay stores for it, every read succeeds unless FailRate says otherwise.
type desk struct {
	g         int
	m         *desktop.Model
	act       *activity
	chans     []int32
	coMembers int
	connected bool
	started   bool
	epochN    int
	open      int     // REQs open on the wire
	roots     []bool  // seeded roots found, per channel
	inbox     []timed // the relay's answers still to arrive
}

type timed struct {
	at time.Duration
	ev desktop.Event
}

// channelSlots stands in for n channel ids: the model only counts them,
// so every client shares one slice of empty ids.
func (s *sim) channelSlots(n int) []string {
	for len(s.slots) < n {
		s.slots = append(s.slots, "")
	}
	return s.slots[:n:n]
}

func newDesk(s *sim, g int, users float64) (*desk, error) {
	p, err := desktop.ModelParams(s.sc, g)
	if err != nil {
		return nil, err
	}
	chans := s.denseAll(s.sc.MemberChannels(g))
	co := s.coMemberCount(g, chans, users, s.sc.Desktop.CoMemberLimitOrDefault())
	p.Channels = s.channelSlots(len(chans))
	p.Presence = co > 0
	m, err := desktop.NewModel(p)
	if err != nil {
		return nil, err
	}
	return &desk{g: g, m: m, act: newActivity(s, g, chans), chans: chans, coMembers: co,
		roots: make([]bool, len(chans))}, nil
}

func (d *desk) wake(s *sim, now time.Duration) time.Duration {
	if !d.started {
		d.started = true
		d.exec(s, d.m.Step(desktop.Start{At: wall(now)}))
	}
	d.drain(s, now)
	w := d.m.NextWake()
	if !w.IsZero() && offset(w) <= now {
		// The socket is busy (presence OKs at least), so the last frame is now.
		d.exec(s, d.m.Step(desktop.Wake{At: wall(now), LastFrame: wall(now)}))
		d.drain(s, now)
		w = d.m.NextWake()
	}
	if d.connected && d.act.run(s, now) {
		d.exec(s, d.m.Step(desktop.SessionEnd{At: wall(now)}))
		d.drain(s, now)
		w = d.m.NextWake()
	}
	next := d.act.next()
	if !w.IsZero() {
		next = min(next, offset(w))
	}
	if len(d.inbox) > 0 {
		next = min(next, d.inbox[0].at)
	}
	return next
}

// drain delivers the answers due by now, and those they cause.
func (d *desk) drain(s *sim, now time.Duration) {
	for len(d.inbox) > 0 && d.inbox[0].at <= now {
		ev := d.inbox[0].ev
		d.inbox = d.inbox[1:]
		if len(d.inbox) == 0 {
			d.inbox = d.inbox[:0:0] // let the backing array go
		}
		if c, ok := ev.(desktop.Connected); ok {
			if c.Epoch != d.epochN {
				continue
			}
			d.connected = true
			s.subscribe(d.chans, 1)
			d.act.begin(now)
		}
		d.exec(s, d.m.Step(ev))
	}
}

func (d *desk) answer(s *sim, ev desktop.Event) {
	d.inbox = append(d.inbox, timed{at: s.now + s.cfg.Latency, ev: ev})
}

func (d *desk) exec(s *sim, acts []desktop.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case desktop.Connect:
			if a.NIP11 {
				s.httpCall(desktop.OpNIP11, "GET", "/ (NIP-11)", 0)
			}
			reason := "start"
			switch {
			case a.Renewal:
				reason = "renewal"
			case d.epochN > 0:
				reason = "reconnect"
			}
			d.epochN = a.Epoch
			s.connect(reason)
			d.answer(s, desktop.Connected{At: wall(s.now + s.cfg.Latency), Epoch: a.Epoch})
		case desktop.Disconnect:
			if d.connected {
				s.subscribe(d.chans, -1)
				d.act.end()
			}
			s.disconnect(d.open)
			d.open = 0
			d.connected = false
		case desktop.OpenSub:
			sp := a.Spec
			n := 0.0
			if !sp.LiveOnly {
				n = d.replayed(s, sp)
			}
			s.req(sp.Op, len(sp.Channels), n)
			d.open++
			at := wall(s.now + s.cfg.Latency)
			if s.failed() {
				d.answer(s, desktop.SubFailed{Sub: sp.ID, At: at})
				continue
			}
			d.answer(s, desktop.EOSE{Sub: sp.ID, At: at, Count: int(n)})
		case desktop.CloseSub:
			// the model closes only what it opened on this connection
			if d.open > 0 {
				d.open--
				s.close()
			}
		case desktop.StartRead:
			ok := d.read(s, a.Read)
			d.answer(s, desktop.ReadSettled{Read: a.Read.Key, At: wall(s.now + s.cfg.Latency), OK: ok, SnapshotOK: ok})
		}
	}
}

// replayed is what the relay replays for a REQ: the stored events of its
// channels since its since, capped where the app cuts a replay.
func (d *desk) replayed(s *sim, sp desktop.SubSpec) float64 {
	since := offset(time.Unix(sp.Since, 0))
	n := 0.0
	for _, i := range sp.Channels {
		if i >= 0 && i < len(d.chans) {
			n += s.storedSince(int(d.chans[i]), since)
		}
	}
	return min(n, desktop.ReplayLimit)
}

// read makes a read's requests as the driver would against the relay's
// answers: window pages by the relay's bounds, roster pages by count, a
// thread's root search once per channel. false when a request fails.
func (d *desk) read(s *sim, r desktop.Read) bool {
	ok := true
	call := func(op string, n float64) {
		if !ok {
			return
		}
		s.httpCall(op, "POST", "/query", n)
		ok = !s.failed()
	}
	switch r.Key.Kind {
	case desktop.ReadWindow:
		ch := d.chans[desktop.WindowChannel(r.Key.Index)]
		top := s.topLevel(ch)
		call(desktop.OpWindow, min(top, desktop.WindowHeadLimit))
		seen := float64(desktop.WindowHeadLimit)
		for page := 0; ok && top > seen && page < desktop.MaxOlderPages; page++ {
			call(desktop.OpWindow, min(top-seen, desktop.WindowOlderLimit))
			seen += desktop.WindowOlderLimit
		}
		return ok
	case desktop.ReadRoster:
		rosters := len(d.chans)
		for page := 0; ok && page < desktop.MaxRosterPages; page++ {
			call(desktop.OpRoster, float64(min(rosters, desktop.RosterPage)))
			if rosters < desktop.RosterPage {
				break
			}
			rosters -= desktop.RosterPage
		}
		return ok
	case desktop.ReadThread:
		// desktop.Client.readThread: the generator's own search for the
		// channel's seeded roots (once per channel, http_query), then the
		// app's lookup of the root by id and the thread's first page.
		if len(d.chans) == 0 {
			return true
		}
		ch := desktop.ThreadChannel(r.Key.Index, len(d.chans))
		if !d.roots[ch] {
			call(relayclient.OpHTTPQuery, float64(s.sc.Shape.ThreadRootsPerChannel))
			if !ok {
				return false
			}
			d.roots[ch] = true
		}
		if s.sc.Shape.ThreadRootsPerChannel == 0 {
			return true
		}
		call(desktop.OpThreadRoot, 1)
		call(desktop.OpThreadWindow, float64(s.sc.Shape.ThreadDepth))
		return ok
	}
	for _, op := range r.Requests(len(d.chans), d.coMembers) {
		call(op, 1)
	}
	return ok
}
