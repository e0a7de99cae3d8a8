package ledger

import (
	"cmp"
	"encoding/hex"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/buzzload/buzzload/modules/report"
)

// histogram holds fan-out completions in microseconds (1 µs to 1 h).
type histogram = hdr.Histogram

func newHistogram() *histogram { return hdr.New(1, int64(time.Hour/time.Microsecond), 2) }

// Tick judges the events whose patience has run out by now.
func (l *Ledger) Tick(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cut := now.Add(-l.cfg.Patience).UnixNano()
	for l.head < len(l.fifo) && l.fifo[l.head].ack <= cut {
		l.retire(l.fifo[l.head], now)
		l.fifo[l.head] = nil
		l.head++
	}
	if l.head > 1024 && l.head*2 > len(l.fifo) {
		l.fifo = append(l.fifo[:0], l.fifo[l.head:]...)
		l.head = 0
	}
}

// Finish judges everything at the end of the run (after the clients have
// stopped): every event still waiting, then every missed pair still not
// recovered is lost. Later calls change nothing.
func (l *Ledger) Finish(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished {
		return
	}
	l.finished = true
	for _, e := range l.fifo[l.head:] {
		l.retire(e, now)
	}
	l.fifo, l.head = nil, 0
	for k, ms := range l.missed {
		for _, m := range ms {
			m.r.c.Lost++
		}
		delete(l.missed, k)
	}
	l.nMissed.Store(0)
	// Events never answered by the end are not the ledger's.
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.mu.Unlock()
	}
	l.byChannel, l.global, l.byAuthor, l.lastAcked = nil, nil, nil, nil
	if l.j != nil {
		l.j.record(recFinish, now, func(b []byte) []byte { return b })
		l.jerr = l.j.flush()
	}
}

// JournalError is the journal's first write error (after Finish).
func (l *Ledger) JournalError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.jerr
}

// retire judges one acknowledged event's pairs (l.mu held).
func (l *Ledger) retire(e *entry, now time.Time) {
	sh := l.shard(&e.id)
	sh.mu.Lock()
	if sh.m[e.id] == e {
		delete(sh.m, e.id)
	}
	sh.mu.Unlock()
	if e.f.channel != "" {
		k := e.f.author + "\x00" + e.f.community + "\x00" + e.f.channel
		if l.lastAcked[k] == e {
			delete(l.lastAcked, k)
		}
	}
	r := l.row(time.Unix(0, e.ack), e.f.class, width(len(e.pairs)))
	c := &r.c
	c.Expected += int64(len(e.pairs))
	c.Duplicates += int64(e.dups)
	l.held -= int64(len(e.pairs))
	horizon := min(e.ack+int64(l.cfg.Patience), now.UnixNano())
	idHex := ""
	for i := range e.pairs {
		p := &e.pairs[i]
		s := p.s
		switch {
		case p.seq != 0:
			c.Received++
		case e.ambiguous:
			c.Unjudged++
		case s.ended && s.closed < e.ack:
			c.Unjudged++ // ended between the send and the OK
		case s.ended && s.byClient && s.closed < e.ack+int64(l.cfg.Due):
			c.Unjudged++ // the client closed it while the delivery may have been on its way
		default:
			at := horizon
			if s.ended && s.closed < at {
				at = s.closed
			}
			if idHex == "" {
				idHex = hex.EncodeToString(e.id[:])
			}
			l.addMiss(e, idHex, s, r, at)
		}
	}
	if len(e.pairs) > 0 && int(e.got) == len(e.pairs) {
		c.Completed++
		_ = r.hist.RecordValue(max(e.last-e.ack, 0) / int64(time.Microsecond))
	}
	if n := e.next; n != nil {
		c.Inversions += l.inversions(e, n)
	}
}

// inversions counts the subscriptions that received e and its author's
// next event in the channel in the opposite order of their OKs. Checking
// each event against the next one finds any disorder (a sequence whose
// neighbours are all in order is in order).
func (l *Ledger) inversions(e, n *entry) int64 {
	sh := l.shard(&n.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var k int64
	i, j := 0, 0
	for i < len(e.pairs) && j < len(n.pairs) {
		a, b := &e.pairs[i], &n.pairs[j]
		switch {
		case a.serial < b.serial:
			i++
		case a.serial > b.serial:
			j++
		default:
			if a.seq != 0 && b.seq != 0 && b.seq < a.seq {
				k++
			}
			i++
			j++
		}
	}
	return k
}

// addMiss records a missed pair awaiting a recovery (l.mu held).
func (l *Ledger) addMiss(e *entry, idHex string, s *Sub, r *row, at int64) {
	m := &miss{s: s, r: r, at: at, list: -1}
	if len(l.missList) < report.MaxLedgerList {
		m.list = len(l.missList)
		l.missList = append(l.missList, report.LedgerMiss{Event: idHex, Recipient: s.recipient, Channel: e.f.channel,
			Subscription: s.id, LiveMissedAt: at / int64(time.Millisecond)})
	}
	k := missKey{e.id, s.recipient}
	l.missed[k] = append(l.missed[k], m)
	l.nMissed.Add(1)
	l.held++
}

// width is the class of an event's expected recipients.
func width(n int) string {
	switch {
	case n <= 10:
		return "≤10"
	case n <= 100:
		return "≤100"
	case n <= 1000:
		return "≤1000"
	}
	return ">1000"
}

// row is the row of step(at), class and width, made on first use (l.mu held).
func (l *Ledger) row(at time.Time, class, w string) *row {
	step := l.cfg.StepAt(at)
	k := rowKey{step, class, w}
	if r := l.rows[k]; r != nil {
		return r
	}
	if _, ok := l.steps[step]; !ok {
		l.steps[step] = len(l.steps)
	}
	r := &row{hist: newHistogram()}
	l.rows[k] = r
	l.order = append(l.order, k)
	return r
}

// Report is the ledger as the report carries it (call after Finish for
// the final counts; before it, a snapshot of what is judged so far).
func (l *Ledger) Report() *report.LedgerReport {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := &report.LedgerReport{Sample: l.cfg.Sample, Events: l.events, Skipped: l.skipped, MaxLost: l.cfg.MaxLost,
		PatienceMs: float64(l.cfg.Patience) / 1e6, DueMs: float64(l.cfg.Due) / 1e6,
		Missed: slices.Clone(l.missList), Leaked: slices.Clone(l.leakList)}
	if out.Missed == nil {
		out.Missed = []report.LedgerMiss{}
	}
	if out.Leaked == nil {
		out.Leaked = []report.LedgerLeak{}
	}
	keys := slices.Clone(l.order)
	slices.SortStableFunc(keys, func(a, b rowKey) int {
		return cmp.Or(cmp.Compare(l.steps[a.step], l.steps[b.step]), cmp.Compare(a.class, b.class), cmp.Compare(widthRank(a.width), widthRank(b.width)))
	})
	all := newHistogram()
	for _, k := range keys {
		r := l.rows[k]
		row := report.LedgerRow{Step: k.step, Class: k.class, Width: k.width, LedgerCounts: r.c}
		row.CompletionP50Ms, row.CompletionP99Ms = quantiles(r.hist)
		row.SetReach()
		out.Rows = append(out.Rows, row)
		out.LedgerCounts.Add(&r.c)
		all.Merge(r.hist)
	}
	if out.Rows == nil {
		out.Rows = []report.LedgerRow{}
	}
	out.Leaks = l.leaks
	out.CompletionP50Ms, out.CompletionP99Ms = quantiles(all)
	out.SetReach()
	return out
}

func quantiles(h *histogram) (p50, p99 float64) {
	if h.TotalCount() == 0 {
		return 0, 0
	}
	return float64(h.ValueAtQuantile(50)) / 1e3, float64(h.ValueAtQuantile(99)) / 1e3
}

func widthRank(w string) int {
	return slices.Index([]string{"≤10", "≤100", "≤1000", ">1000"}, w)
}

// Counts are the running totals for live outputs: pairs expected and
// received so far, missed live so far, and lost (final after Finish).
func (l *Ledger) Counts() (expected, received, missed, lost int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.rows {
		expected += r.c.Expected
		received += r.c.Received
		lost += r.c.Lost
		missed += r.c.Lost + r.c.Recovered + r.c.ReceivedLate
	}
	missed += l.nMissed.Load()
	return expected, received, missed, lost
}
