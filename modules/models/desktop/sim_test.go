package desktop

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

// sim plays the relay and the driver around a Model: it records every
// action, keeps the open subscriptions and running reads, and answers them
// on request. Nothing here sleeps: time is s.now.
type sim struct {
	t         *testing.T
	m         *Model
	now       time.Time
	lastFrame time.Time
	epoch     int
	coMembers int
	silent    bool               // no frames arrive while time advances
	sent      map[string]SubSpec // REQs awaiting an answer
	wire      map[string]SubSpec // REQs open on the wire
	reads     []Read             // running reads
	ops       map[string]int
	log       []string
}

func channels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%02d", i)
	}
	return out
}

func params(mode Mode, nch int) Params {
	return Params{Mode: mode, Channels: channels(nch), Presence: true, Windows: 3, Threads: 1,
		Tick: 60 * time.Second, Backstop: 900 * time.Second}
}

func newSim(t *testing.T, p Params) *sim {
	t.Helper()
	m, err := NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	return &sim{t: t, m: m, now: t0, coMembers: 10, sent: map[string]SubSpec{}, wire: map[string]SubSpec{}, ops: map[string]int{}}
}

func (s *sim) do(ev Event) []Action {
	acts := s.m.Step(ev)
	for _, a := range acts {
		switch a := a.(type) {
		case Connect:
			s.epoch = a.Epoch
			if a.NIP11 {
				s.ops[OpNIP11]++
			}
			s.log = append(s.log, fmt.Sprintf("connect nip11=%v renewal=%v", a.NIP11, a.Renewal))
		case Disconnect:
			clear(s.sent)
			clear(s.wire)
			s.log = append(s.log, "disconnect")
		case OpenSub:
			s.sent[a.Spec.ID] = a.Spec
			s.wire[a.Spec.ID] = a.Spec
			s.ops[a.Spec.Op]++
			s.log = append(s.log, "REQ "+a.Spec.ID+" "+a.Spec.Route.String()+liveTag(a.Spec))
		case CloseSub:
			delete(s.sent, a.ID)
			delete(s.wire, a.ID)
			s.log = append(s.log, "CLOSE "+a.ID)
		case StartRead:
			s.reads = append(s.reads, a.Read)
			for _, op := range a.Read.Requests(len(s.m.p.Channels), s.coMembers) {
				s.ops[op]++
			}
			s.log = append(s.log, "read "+a.Read.Key.String()+snapTag(a.Read))
		}
	}
	return acts
}

func liveTag(sp SubSpec) string {
	if sp.LiveOnly {
		return " live-only"
	}
	return ""
}

func snapTag(r Read) string {
	if r.Key.Kind == ReadUnread && r.Snapshot {
		return "+snapshot"
	}
	return ""
}

func (s *sim) start()     { s.do(Start{At: s.now}) }
func (s *sim) connected() { s.do(Connected{At: s.now, Epoch: s.epoch}) }

// drop is a failed session (the socket went away).
func (s *sim) drop() { s.do(Disconnected{At: s.now, Epoch: s.epoch}) }

func subNum(id string) int { n, _ := strconv.Atoi(strings.TrimPrefix(id, "live-")); return n }

func (s *sim) sentIDs() []string {
	ids := slices.Collect(maps.Keys(s.sent))
	slices.SortFunc(ids, func(a, b string) int { return subNum(a) - subNum(b) })
	return ids
}

// eoseAll answers every REQ, in order, with count(spec) replayed events,
// until none awaits an answer (each answer may send queued REQs).
func (s *sim) eoseAll(count func(SubSpec) int) {
	for len(s.sent) > 0 {
		for _, id := range s.sentIDs() {
			sp, ok := s.sent[id]
			if !ok {
				continue
			}
			delete(s.sent, id)
			n := 0
			if count != nil && !sp.LiveOnly {
				n = count(sp)
			}
			s.lastFrame = s.now
			s.do(EOSE{Sub: id, At: s.now, Count: n})
		}
	}
}

// failSub makes the first awaiting REQ matching pred miss its deadline.
func (s *sim) failSub(pred func(SubSpec) bool) string {
	for _, id := range s.sentIDs() {
		if pred(s.sent[id]) {
			delete(s.sent, id)
			s.do(SubFailed{Sub: id, At: s.now})
			return id
		}
	}
	s.t.Fatalf("no awaiting REQ matches")
	return ""
}

// settle finishes running reads; outcome says how each ends (nil: ok).
// Reads started by settling are settled too, until none is running.
func (s *sim) settle(outcome func(Read) (ok, snapOK bool)) {
	for len(s.reads) > 0 {
		r := s.reads[0]
		s.reads = s.reads[1:]
		ok, snap := true, true
		if outcome != nil {
			ok, snap = outcome(r)
		}
		s.do(ReadSettled{Read: r.Key, At: s.now, OK: ok, SnapshotOK: snap})
	}
}

// quiesce answers everything with empty replays and successful reads.
func (s *sim) quiesce() {
	for len(s.sent) > 0 || len(s.reads) > 0 {
		s.eoseAll(nil)
		s.settle(nil)
	}
}

// coldStart starts and connects the client and answers everything.
func (s *sim) coldStart() {
	s.start()
	s.connected()
	s.quiesce()
}

// advance moves time by d, waking the model at each timer on the way (and
// at the end), with lastFrame as the newest frame.
func (s *sim) advance(d time.Duration) {
	end := s.now.Add(d)
	for {
		w := s.m.NextWake()
		if w.IsZero() || w.After(end) {
			break
		}
		s.now = w
		s.frames()
		s.do(Wake{At: s.now, LastFrame: s.lastFrame})
	}
	s.now = end
	s.frames()
	s.do(Wake{At: s.now, LastFrame: s.lastFrame})
}

// frames: unless the socket is silent, a frame arrived just now.
func (s *sim) frames() {
	if !s.silent && s.m.Connected() {
		s.lastFrame = s.now.Add(-time.Millisecond)
	}
}

// mark starts a new section of the op counts and log.
func (s *sim) mark() {
	clear(s.ops)
	s.log = nil
}

func (s *sim) readLog() []string {
	var out []string
	for _, l := range s.log {
		if strings.HasPrefix(l, "read ") {
			out = append(out, strings.TrimPrefix(l, "read "))
		}
	}
	slices.Sort(out)
	return out
}

func (s *sim) wantOps(want map[string]int) {
	s.t.Helper()
	got := maps.Clone(s.ops)
	maps.DeleteFunc(got, func(_ string, n int) bool { return n == 0 })
	if !maps.Equal(got, want) {
		s.t.Errorf("ops:\n got %v\nwant %v\nlog: %q", got, want, s.log)
	}
}

// wantReads settles the running reads (ok) and compares every read started
// since the mark.
func (s *sim) wantReads(want ...string) {
	s.t.Helper()
	s.settle(nil)
	slices.Sort(want)
	if got := s.readLog(); !slices.Equal(got, want) {
		s.t.Errorf("reads:\n got %q\nwant %q\nlog: %q", got, want, s.log)
	}
}

func isRoute(k RouteKind) func(SubSpec) bool {
	return func(sp SubSpec) bool { return sp.Route == k && !sp.Probe }
}

// replays is a replay count: n for route kind k, 0 elsewhere.
func replays(n int, ks ...RouteKind) func(SubSpec) int {
	return func(sp SubSpec) int {
		if slices.Contains(ks, sp.Route) {
			return n
		}
		return 0
	}
}

func everywhere(n int) func(SubSpec) int { return func(SubSpec) int { return n } }
