// Package ledger is the delivery ledger (issue 40): for every event the
// run publishes (or a sample chosen by its id, the same on every runner),
// which of the run's own live subscriptions should have received it, which
// did, which missed it live and read it later anyway, which never did, and
// which received what they must not.
//
// The unit is an (event, subscription) pair. A subscription is expected to
// receive an event when its EOSE had arrived before the publish was sent
// and its filters match the event under Buzz's fan-out rules (match.go).
// Each event waits Patience after its OK for its deliveries; then its pairs
// are judged and folded into counters, so memory follows the pairs still
// waiting and the missed ones, not the run's length. A missed pair waits
// for a recovery (a read of the event by its recipient) until the end.
//
// The relay client tells the ledger everything (relayclient.Ledger); the
// extension ticks it and finishes it after the clients have stopped.
package ledger

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
)

// Config tunes a ledger. Zero values take the defaults.
type Config struct {
	// Sample is the share of events judged, chosen by the event id's
	// first 8 bytes, so every runner of a distributed run judges the same
	// events ([verify] ledger_sample); 0 = 1.
	Sample float64
	// Patience is how long after its OK an event's live deliveries may
	// take before the missing ones are declared missed (a later one still
	// counts, as late).
	Patience time.Duration
	// Due: a pair whose subscription the client itself closed within Due
	// of the OK, without the event, is unjudged (the delivery may have
	// been on its way).
	Due time.Duration
	// MaxPairs bounds the pairs held (waiting or missed): an event that
	// would pass it is skipped and counted (DefaultMaxPairs: ~17 B each,
	// BenchmarkLedgerMemory, so about 50 MB).
	MaxPairs int64
	// MaxLost is [verify] max_lost, carried into the report.
	MaxLost int64
	// StepAt names the ramp step of a moment ("" without steps).
	StepAt func(time.Time) string
	// Journal, when set, receives every call the ledger gets (journal.go),
	// for a distributed run's merge (Replay). Flushed by Finish.
	Journal io.Writer
}

// Defaults.
const (
	DefaultPatience = 30 * time.Second
	DefaultDue      = 5 * time.Second
	DefaultMaxPairs = 3_000_000
)

const nShards = 32

// Ledger is one run's delivery ledger. Safe for concurrent use.
type Ledger struct {
	cfg       Config
	threshold uint64 // an event is judged when its id's first 8 bytes are ≤ it
	shards    [nShards]shard

	// mu guards everything below and is never taken while a shard's is
	// held (a shard's may be taken under it).
	mu        sync.Mutex
	serial    uint32
	byChannel map[chanKey][]listed // live channel-scoped subscriptions, in serial order
	global    map[string][]listed  // live global subscriptions by community (but byAuthor's)
	byAuthor  map[chanKey][]listed // global ones whose every filter names authors, by community and author
	scratch   []pair
	fifo      []*entry // acknowledged events in the order of their OKs
	head      int
	lastAcked map[string]*entry // author and channel → the newest acknowledged event
	held      int64             // pairs held (waiting and missed)
	events    int64
	skipped   int64
	rows      map[rowKey]*row
	order     []rowKey
	steps     map[string]int // a step's first appearance, for the rows' order
	missed    map[missKey][]*miss
	missList  []report.LedgerMiss
	leaks     int64
	leakList  []report.LedgerLeak
	finished  bool

	nMissed atomic.Int64 // len of missed's lists, read without mu on the delivery path

	j    *journal // nil: no journal
	jerr error    // its first error, once finished
}

type shard struct {
	mu sync.Mutex
	m  map[[32]byte]*entry
}

type chanKey struct{ community, channel string }

// entry is one published event while its deliveries are awaited.
type entry struct {
	id        [32]byte
	f         facts
	sent, ack int64 // unix ns
	acked     bool
	ambiguous bool // published twice under one id: its missing pairs are unjudged
	dups      int32
	got       int32
	last      int64 // the latest expected delivery (unix ns)
	pairs     []pair
	next      *entry // the same author's next acknowledged event in the channel
}

// pair is one expected recipient: seq is the subscription's delivery
// number of the event (0: not received); serial is the subscription's,
// kept here so a delivery's look-up reads only the pairs.
type pair struct {
	s      *Sub
	serial uint32
	seq    uint32
}

// listed is a live subscription in a channel's (or a community's global)
// list, with what decides most matches inline: the kinds its filters for
// this list take, when nothing else in them (authors, #p) needs the event.
// A list's entries are contiguous, so a publish into a wide channel reads
// one block rather than following a pointer per member (the ledger's
// Sent was 7 % of a run's CPU when it did: scripts/ledger-cpu.sh).
type listed struct {
	s      *Sub
	serial uint32
	cond   bool // match through s (authors, #p, or more kinds than fit)
	pOnly  bool // every filter of s for this list names #p: no p tag, no match
	any    bool // any kind
	nk     uint8
	kinds  [6]int32
}

// appendMatches appends the pairs of the listed subscriptions that match f.
func appendMatches(dst []pair, list []listed, f *facts) []pair {
	for i := range list {
		if c := &list[i]; c.matches(f) {
			dst = append(dst, pair{s: c.s, serial: c.serial})
		}
	}
	return dst
}

// matches reports whether the listed subscription matches the facts.
func (c *listed) matches(f *facts) bool {
	if c.cond {
		if c.pOnly && len(f.p) == 0 {
			return false // a mention subscription, an event that mentions no one
		}
		return c.s.match(f)
	}
	if c.any {
		return true
	}
	for _, k := range c.kinds[:c.nk] {
		if int(k) == f.kind {
			return true
		}
	}
	return false
}

type missKey struct {
	id        [32]byte
	recipient string
}

type miss struct {
	s    *Sub
	r    *row
	at   int64 // missed live at (unix ns)
	list int   // index in missList, -1 past its bound
}

type rowKey struct{ step, class, width string }

type row struct {
	c    report.LedgerCounts
	hist *histogram
}

// New makes a ledger.
func New(cfg Config) *Ledger {
	if cfg.Sample <= 0 || cfg.Sample > 1 {
		cfg.Sample = 1
	}
	if cfg.Patience <= 0 {
		cfg.Patience = DefaultPatience
	}
	if cfg.Due <= 0 {
		cfg.Due = DefaultDue
	}
	if cfg.MaxPairs <= 0 {
		cfg.MaxPairs = DefaultMaxPairs
	}
	if cfg.StepAt == nil {
		cfg.StepAt = func(time.Time) string { return "" }
	}
	l := &Ledger{cfg: cfg, byChannel: map[chanKey][]listed{}, global: map[string][]listed{}, byAuthor: map[chanKey][]listed{},
		lastAcked: map[string]*entry{}, rows: map[rowKey]*row{}, steps: map[string]int{}, missed: map[missKey][]*miss{}}
	l.threshold = math.MaxUint64
	if cfg.Sample < 1 {
		l.threshold = uint64(cfg.Sample * float64(math.MaxUint64))
	}
	for i := range l.shards {
		l.shards[i].m = map[[32]byte]*entry{}
	}
	if cfg.Journal != nil {
		l.j = newJournal(cfg.Journal)
	}
	return l
}

var _ relayclient.Ledger = (*Ledger)(nil)

// MarkStart records the timeline's start in the journal: a merge names
// the steps of the replayed events from it.
func (l *Ledger) MarkStart(t time.Time) {
	if l.j != nil {
		l.j.record(recStart, t, func(b []byte) []byte { return b })
	}
}

// Sampled reports whether the event with this id is judged: the same
// answer on every runner.
func (l *Ledger) Sampled(id [32]byte) bool { return binary.BigEndian.Uint64(id[:8]) <= l.threshold }

func decodeID(s string, id *[32]byte) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.Decode(id[:], []byte(s))
	return err == nil
}

func (l *Ledger) shard(id *[32]byte) *shard { return &l.shards[id[0]&(nShards-1)] }

// Sent implements relayclient.Ledger: the expected recipients are fixed
// now, from the subscriptions whose EOSE has arrived.
func (l *Ledger) Sent(ev *nostr.Event, community, via string, at time.Time) {
	var id [32]byte
	if !tracked(ev.Kind) || !decodeID(ev.ID, &id) || !l.Sampled(id) {
		return
	}
	f := factsOf(ev, community, via)
	if l.j != nil {
		l.j.sent(at, id, &f)
	}
	l.sent(id, f, at)
}

// sent fixes the expected recipients of event id (facts f) sent at.
func (l *Ledger) sent(id [32]byte, f facts, at time.Time) {
	community := f.community
	e := &entry{id: id, f: f, sent: at.UnixNano()}
	l.mu.Lock()
	if l.finished {
		l.mu.Unlock()
		return
	}
	buf := l.scratch[:0]
	if f.channel != "" {
		buf = appendMatches(buf, l.byChannel[chanKey{community, f.channel}], &f)
	} else {
		// The global subscriptions that name authors are listed by author
		// (the presence REQs: a few co-members each), the rest together:
		// the two runs of pairs are merged into serial order.
		buf = appendMatches(buf, l.global[community], &f)
		n := len(buf)
		buf = appendMatches(buf, l.byAuthor[chanKey{community, f.author}], &f)
		if n > 0 && n < len(buf) {
			slices.SortFunc(buf, func(a, b pair) int { return cmp.Compare(a.serial, b.serial) })
		}
	}
	if len(buf) > 0 {
		e.pairs = append(make([]pair, 0, len(buf)), buf...)
	}
	l.scratch = buf[:0]
	if l.held+int64(len(e.pairs)) > l.cfg.MaxPairs {
		l.skipped++
		l.mu.Unlock()
		return
	}
	l.held += int64(len(e.pairs))
	l.mu.Unlock()

	sh := l.shard(&id)
	sh.mu.Lock()
	old := sh.m[id]
	if old == nil {
		sh.m[id] = e
	} else {
		old.ambiguous = true // the same event sent twice: one set of pairs, judged loosely
	}
	sh.mu.Unlock()
	if old != nil {
		l.mu.Lock()
		l.held -= int64(len(e.pairs))
		l.mu.Unlock()
	}
}

// Settled implements relayclient.Ledger.
func (l *Ledger) Settled(idHex string, accepted bool, at time.Time) {
	var id [32]byte
	if !decodeID(idHex, &id) || !l.Sampled(id) {
		return
	}
	if l.j != nil {
		l.j.settled(at, id, accepted)
	}
	l.settled(id, accepted, at)
}

func (l *Ledger) settled(id [32]byte, accepted bool, at time.Time) {
	sh := l.shard(&id)
	sh.mu.Lock()
	e := sh.m[id]
	if e == nil || e.acked {
		sh.mu.Unlock()
		return
	}
	if !accepted {
		// Never acknowledged: not the ledger's (the never-acknowledged
		// events audit watches those).
		delete(sh.m, id)
		sh.mu.Unlock()
		l.mu.Lock()
		l.held -= int64(len(e.pairs))
		l.mu.Unlock()
		return
	}
	e.acked, e.ack = true, at.UnixNano()
	sh.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events++
	l.fifo = append(l.fifo, e)
	if e.f.channel != "" {
		k := e.f.author + "\x00" + e.f.community + "\x00" + e.f.channel
		if prev := l.lastAcked[k]; prev != nil {
			prev.next = e
		}
		l.lastAcked[k] = e
	}
}

// Open implements relayclient.Ledger.
func (l *Ledger) Open(recipient, community, sub string, filters []relayclient.Filter) relayclient.SubLedger {
	fs, channels, ok := compile(filters)
	if !ok {
		return nil
	}
	s := &Sub{l: l, id: sub, recipient: recipient, community: community, filters: fs, channels: channels}
	s.setNeedP()
	return s
}

// Seen implements relayclient.Ledger.
func (l *Ledger) Seen(recipient string, ev *nostr.EventView, at time.Time) {
	if l.nMissed.Load() == 0 && l.j == nil {
		return
	}
	var id [32]byte
	if _, err := hex.Decode(id[:], ev.ID[:]); err == nil {
		l.seenID(recipient, id, at)
	}
}

// SeenID implements relayclient.Ledger: a read of a missed pair's event by
// its recipient recovers it.
func (l *Ledger) SeenID(recipient, idHex string, at time.Time) {
	if l.nMissed.Load() == 0 && l.j == nil {
		return
	}
	var id [32]byte
	if decodeID(idHex, &id) {
		l.seenID(recipient, id, at)
	}
}

// seenID journals a read of a sampled event and looks for its recovery.
func (l *Ledger) seenID(recipient string, id [32]byte, at time.Time) {
	if !l.Sampled(id) {
		return
	}
	if l.j != nil {
		l.j.seen(recipient, id, at)
	}
	l.seen(recipient, id, at)
}

func (l *Ledger) seen(recipient string, id [32]byte, at time.Time) {
	if l.nMissed.Load() == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := missKey{id, recipient}
	ms := l.missed[k]
	if ms == nil {
		return
	}
	delete(l.missed, k)
	l.nMissed.Add(-int64(len(ms)))
	l.held -= int64(len(ms))
	for _, m := range ms {
		m.r.c.Recovered++
		if m.list >= 0 {
			d := float64(max(at.UnixNano()-m.at, 0)) / 1e6
			l.missList[m.list].RecoveredMs = &d
		}
	}
}

// late takes a live delivery of a pair already declared missed: received
// late. False when it was not one.
func (l *Ledger) late(id [32]byte, s *Sub, at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := missKey{id, s.recipient}
	ms := l.missed[k]
	for i, m := range ms {
		if m.s != s {
			continue
		}
		ms = append(ms[:i], ms[i+1:]...)
		if len(ms) == 0 {
			delete(l.missed, k)
		} else {
			l.missed[k] = ms
		}
		l.nMissed.Add(-1)
		l.held--
		m.r.c.Received++
		m.r.c.ReceivedLate++
		if m.list >= 0 {
			d := float64(max(at.UnixNano()-m.at, 0)) / 1e6
			l.missList[m.list].ReceivedLateMs = &d
		}
		return true
	}
	return false
}

// leak records a delivery that must not have happened.
func (l *Ledger) leak(idHex, channel string, s *Sub, rule string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaks++
	if len(l.leakList) < report.MaxLedgerList {
		l.leakList = append(l.leakList, report.LedgerLeak{Event: idHex, Recipient: s.recipient, Channel: channel,
			Subscription: s.id, Rule: rule, At: at.UnixMilli()})
	}
}
