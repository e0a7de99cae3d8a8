package plan

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Config is one simulation: a validated scenario, when each client starts,
// and how the relay answers.
type Config struct {
	Scenario *scenario.Scenario
	// Starts[k][n] is when the n-th client of kind k in
	// Scenario.Clients(k, peak users) order starts, as an offset from the
	// run's start: the VU start times of the kind's ramping-vus plan (the
	// caller computes them with the runner's own executor, so a plan and a
	// run agree on who is online when). Clients past the end of a kind's
	// slice do not run.
	Starts [scenario.NumKinds][]time.Duration
	// Duration is the simulated time; nothing starts at or after it.
	Duration time.Duration
	// FailRate is the share of HTTP reads and replays that fail (0..1);
	// Latency is every answer's delay.
	FailRate float64
	Latency  time.Duration
	// Shards, above 1, splits the clients over that many simulations run
	// side by side and merged (merge.go says what that approximates).
	Shards int
}

func (c *Config) validate() error {
	switch {
	case c.Scenario == nil:
		return errors.New("plan: no scenario")
	case c.Duration <= 0:
		return fmt.Errorf("plan: duration %v must be above 0", c.Duration)
	case !(c.FailRate >= 0 && c.FailRate <= 1):
		return fmt.Errorf("plan: failure rate %v is outside [0, 1]", c.FailRate)
	case c.Latency < 0:
		return fmt.Errorf("plan: latency %v must not be negative", c.Latency)
	case c.Shards < 0:
		return fmt.Errorf("plan: %d shards", c.Shards)
	}
	return nil
}

// never is the wake of an actor with nothing more to do.
const never = time.Duration(1<<63 - 1)

// actor is one simulated client. wake does everything due at now and
// returns when it next needs waking (never: done).
type actor interface {
	wake(s *sim, now time.Duration) time.Duration
}

type item struct {
	at  time.Duration
	seq uint64
	a   actor
}

// queue is a binary min-heap of wake-ups by (at, seq), typed so that
// pushing and popping millions of wake-ups allocates nothing
// (container/heap boxes every item in an interface).
type queue []item

func (q queue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *queue) push(it item) {
	*q = append(*q, it)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() item {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = item{}
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// sim is the relay's side of the simulation: it counts what the clients
// send and keeps who is subscribed to which channel, for fan-out.
type sim struct {
	cfg   Config
	sc    *scenario.Scenario
	now   time.Duration
	q     queue
	seq   uint64
	t     *tally
	fail  *rand.Rand
	sizes sizes

	channels []channelState // dense: community·channels_per_community + index
	// communities' messages and deliveries
	commEvents, commDeliveries []counter
	hot                        hotCounters
	conns                      gauge
	reqs                       gauge
	hPerREQ                    struct{ n, sum, max float64 }
	// coMembers caches co-member counts by channel set: every member of
	// the same set has the same count (scenario.CoMembers stops at its
	// limit, and the union of the set's members is the same for each).
	coMembers map[coKey]int
	slots     []string // shared placeholder channel ids (desk)
	// chanSize is every channel's members among all the simulated
	// clients (all shards), as scenario.ChannelMembersAt counts them.
	chanSize []int32
	shards   int // 1, or how many simulations split the clients (merge.go)
}

type coKey struct {
	chans string
	limit int
}

// coMemberCount is len(sc.CoMembers(g, users, limit)), computed once per
// distinct channel set.
func (s *sim) coMemberCount(g int, chans []int32, users float64, limit int) int {
	for _, c := range chans {
		if int(s.chanSize[c]) > limit { // limit others besides g in one channel
			return limit
		}
	}
	b := make([]byte, 0, 4*len(chans))
	for _, c := range chans {
		b = append(b, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
	}
	k := coKey{chans: string(b), limit: limit}
	if n, ok := s.coMembers[k]; ok {
		return n
	}
	n := len(s.sc.CoMembers(g, users, limit))
	s.coMembers[k] = n
	return n
}

// hotCounters are the counters every event touches, looked up once.
type hotCounters struct {
	publish, deliver, fanout, out, in *counter
	kinds, wsEvents                   map[int]*counter
}

type channelState struct {
	events, deliveries counter
	subscribers        int32   // connected clients receiving the channel's live events
	seeded             float64 // events the seed stored before the run
	seededTop          float64 // ...of them top-level messages (window paging)
	stored             float64 // events stored during the run (this shard's)
	topLevel           float64 // ...of them top-level messages
	perMinute          []float64
	// In a sharded simulation, the live-audience changes and messages, for
	// the fan-out across shards (merge.go).
	deltas    []audienceDelta
	msgs      []message
	lastMsg   time.Duration // when the newest message arrived (-1: none)
	lastReply bool          // the newest message is a thread reply
	msgSeq    uint64
}

func newSim(cfg Config) (*sim, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sc := cfg.Scenario
	s := &sim{cfg: cfg, sc: sc, t: newTally(), coMembers: map[coKey]int{}, shards: max(cfg.Shards, 1)}
	s.conns.logOn, s.reqs.logOn = s.shards > 1, s.shards > 1
	a, b := models.SeedFor(sc.RunID, -1)
	s.fail = rand.New(rand.NewPCG(a, b))
	s.sizes = measureSizes(sc)
	n := sc.Shape.Communities * sc.Shape.ChannelsPerCommunity
	s.channels = make([]channelState, n)
	s.commEvents = make([]counter, sc.Shape.Communities)
	s.commDeliveries = make([]counter, sc.Shape.Communities)
	s.hot = hotCounters{publish: s.t.counter("op", "publish"), wsEvents: map[int]*counter{},
		deliver: s.t.counter("op", "deliver"), fanout: s.t.counter("fanout", "deliveries"),
		out: s.t.counter("bytes", "client→relay"), in: s.t.counter("bytes", "relay→client"), kinds: map[int]*counter{}}
	seeded := float64(sc.Shape.HistoryMessagesPerChannel + sc.Shape.ThreadRootsPerChannel*(1+sc.Shape.ThreadDepth))
	for i := range s.channels {
		s.channels[i] = channelState{seeded: seeded, seededTop: float64(sc.Shape.HistoryMessagesPerChannel + sc.Shape.ThreadRootsPerChannel), lastMsg: -1}
		if seeded > 0 {
			s.channels[i].lastMsg = 0
		}
	}
	if sc.HotThreadEnabled() {
		hc := s.dense(sc.HotThreadChannel())
		s.channels[hc].seeded += float64(sc.HotThread.SeedReplies + 1)
		s.channels[hc].seededTop++
	}
	return s, nil
}

// dense is the channel's index in s.channels.
func (s *sim) dense(ch scenario.Channel) int {
	return ch.Community*s.sc.Shape.ChannelsPerCommunity + ch.Index
}

func (s *sim) denseAll(chs []scenario.Channel) []int32 {
	out := make([]int32, len(chs))
	for i, ch := range chs {
		out[i] = int32(s.dense(ch))
	}
	return out
}

func (s *sim) add(a actor, at time.Duration) {
	if at >= s.cfg.Duration || at == never {
		return
	}
	s.seq++
	s.q.push(item{at: at, seq: s.seq, a: a})
}

// run wakes actors in time order until the duration ends.
func (s *sim) run() {
	for len(s.q) > 0 {
		it := s.q.pop()
		s.now = it.at
		next := it.a.wake(s, it.at)
		if next < it.at {
			next = it.at
		}
		s.add(it.a, next)
	}
	s.now = s.cfg.Duration
}

// failed draws whether one answer fails.
func (s *sim) failed() bool {
	return s.cfg.FailRate > 0 && s.fail.Float64() < s.cfg.FailRate
}

// Accounting: every request is an op (what the report would show), an
// endpoint (what the relay sees) and bytes each way.

func (s *sim) op(name string, n float64) {
	if n != 0 {
		s.t.add("op", name, s.now, n)
	}
}

func (s *sim) endpoint(name string, n float64) { s.t.add("endpoint", name, s.now, n) }

func (s *sim) bytes(out, in float64) {
	if out != 0 {
		s.hot.out.add(s.now, out)
	}
	if in != 0 {
		s.hot.in.add(s.now, in)
	}
}

// connect is a WebSocket connect and its NIP-42 AUTH.
func (s *sim) connect(reason string) {
	s.op("connect", 1)
	s.op("auth", 1)
	s.endpoint("WS connect", 1)
	s.endpoint("WS AUTH", 1)
	s.t.add("connects", reason, s.now, 1)
	s.conns.add(s.now, 1)
	s.bytes(s.sizes.upgrade+s.sizes.auth, s.sizes.upgradeReply+s.sizes.authChallenge+s.sizes.ok)
}

// disconnect closes a connection that had open REQs open.
func (s *sim) disconnect(open int) {
	s.conns.add(s.now, -1)
	s.reqs.add(s.now, -float64(open))
}

// req is one REQ naming hs #h channels, recorded under op; the relay
// answers with replayed stored events and an EOSE.
func (s *sim) req(op string, hs int, replayed float64) {
	s.op(op, 1)
	s.endpoint("WS REQ", 1)
	s.reqs.add(s.now, 1)
	if hs > 0 {
		s.hPerREQ.n++
		s.hPerREQ.sum += float64(hs)
		s.hPerREQ.max = max(s.hPerREQ.max, float64(hs))
	}
	s.bytes(s.sizes.req+float64(hs)*s.sizes.hTag, replayed*s.sizes.event+s.sizes.eose)
}

func (s *sim) close() {
	s.endpoint("WS CLOSE", 1)
	s.reqs.add(s.now, -1)
	s.bytes(s.sizes.close, 0)
}

// event is one EVENT sent on a socket (publish) of the given kind, into
// channel ch (-1: none); timed messages fan out to the channel's
// subscribers.
func (s *sim) event(kind int, ch int, timed bool) {
	s.hot.publish.add(s.now, 1)
	ec := s.hot.wsEvents[kind]
	if ec == nil {
		ec = s.t.counter("endpoint", "WS EVENT "+kindName(kind))
		s.hot.wsEvents[kind] = ec
	}
	ec.add(s.now, 1)
	s.kind(kind, ch, timed)
	s.bytes(s.sizes.event, s.sizes.ok)
}

// httpCall is one NIP-98-signed HTTP request to path, recorded under op,
// answered with n events.
func (s *sim) httpCall(op, method, path string, n float64) {
	s.op(op, 1)
	s.endpoint("HTTP "+method+" "+path, 1)
	s.bytes(s.sizes.httpRequest, s.sizes.httpReply+n*s.sizes.event)
}

// httpEvent is one event posted through /events.
func (s *sim) httpEvent(op string, kind, ch int, timed bool) {
	s.httpCall(op, "POST", "/events", 0)
	s.bytes(s.sizes.event, 0)
	s.kind(kind, ch, timed)
}

// kind counts an accepted event and, for a channel message, stores it and
// fans it out.
func (s *sim) kind(kind int, ch int, timed bool) {
	kc := s.hot.kinds[kind]
	if kc == nil {
		kc = s.t.counter("kind", kindName(kind))
		s.hot.kinds[kind] = kc
	}
	kc.add(s.now, 1)
	if ch < 0 {
		return
	}
	c := &s.channels[ch]
	if kind == kindMessage || kind == kindReaction {
		c.stored++
		m := int(s.now / time.Minute)
		for len(c.perMinute) <= m {
			c.perMinute = append(c.perMinute, 0)
		}
		c.perMinute[m]++
	}
	if kind != kindMessage {
		return
	}
	c.msgSeq++
	c.lastMsg = s.now
	c.lastReply = false
	c.topLevel++ // a reply takes it back (lastReply)
	if s.shards > 1 {
		c.msgs = append(c.msgs, message{at: s.now, timed: timed})
	}
	n := float64(c.subscribers)
	community := ch / s.sc.Shape.ChannelsPerCommunity
	s.commEvents[community].add(s.now, 1)
	c.events.add(s.now, 1)
	if n == 0 {
		return
	}
	s.hot.fanout.add(s.now, n)
	s.commDeliveries[community].add(s.now, n)
	c.deliveries.add(s.now, n)
	s.bytes(0, n*s.sizes.event)
	if timed {
		s.hot.deliver.add(s.now, n)
	}
}

// storedSince is how many stored events of channel ch are newer than
// offset since: the seed's when since is before the run, and the run's
// from the whole minutes after since. In a sharded simulation each shard
// stores only its own clients' events, so the run's part is scaled up.
func (s *sim) storedSince(ch int, since time.Duration) float64 {
	c := &s.channels[ch]
	n := c.stored
	for m, v := range c.perMinute {
		if time.Duration(m+1)*time.Minute > since {
			break // the minutes are in order: none later is before since
		}
		n -= v
	}
	n = max(n, 0) * float64(s.shards)
	if since <= 0 {
		n += c.seeded
	}
	return n
}

// topLevel is how many top-level messages channel ch holds.
func (s *sim) topLevel(ch int32) float64 {
	c := &s.channels[ch]
	return c.seededTop + c.topLevel*float64(s.shards)
}

// markReply notes that the newest message of ch is a thread reply.
func (s *sim) markReply(ch int32) {
	c := &s.channels[ch]
	c.lastReply = true
	c.topLevel--
}

// subscribe adds or removes a client from the live audience of channels.
func (s *sim) subscribe(chs []int32, d int32) {
	for _, c := range chs {
		s.channels[c].subscribers += d
		if s.shards > 1 {
			s.channels[c].deltas = append(s.channels[c].deltas, audienceDelta{at: s.now, d: d})
		}
	}
}
