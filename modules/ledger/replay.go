package ledger

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/buzzload/buzzload/modules/report"
)

// Replay judges the journals of a distributed run's runners as one ledger:
// their records, merged in time order (each journal in its own order),
// are the calls one ledger gets, ticked every second of their time and
// finished at the last record (the latest runner's end). names label the journals in errors.
// The runners' clocks are taken as they are: a pair whose subscription
// went live within a clock skew of the publish may be judged either way.
//
// stepOf names the step of a moment by its offset from the timeline's
// start (the earliest start a journal records); nil: cfg.StepAt.
func Replay(cfg Config, stepOf func(time.Duration) string, names []string, journals []io.Reader) (*report.LedgerReport, error) {
	cfg.Journal = nil
	var start int64
	if stepOf != nil {
		cfg.StepAt = func(t time.Time) string { return stepOf(time.Duration(t.UnixNano() - start)) }
	}
	l := New(cfg)
	type stream struct {
		name string
		d    *reader
		cur  rec
		done bool
		subs map[uint64]*Sub
	}
	var ss []*stream
	for i, r := range journals {
		d, err := newReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		s := &stream{name: names[i], d: d, subs: map[uint64]*Sub{}}
		if err := s.d.next(&s.cur); err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
			s.done = true
		}
		ss = append(ss, s)
	}
	var tick, last int64
	for {
		var s *stream
		for _, c := range ss {
			if !c.done && (s == nil || before(&c.cur, &s.cur)) {
				s = c
			}
		}
		if s == nil {
			break
		}
		r := &s.cur
		if tick == 0 {
			tick = r.at + int64(time.Second)
		}
		for ; tick <= r.at; tick += int64(time.Second) {
			l.Tick(time.Unix(0, tick))
		}
		if r.typ == recStart && (start == 0 || r.at < start) {
			start = r.at
		}
		if err := apply(l, s.subs, r); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		last = max(last, r.at)
		if err := s.d.next(&s.cur); err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			s.done = true
		}
	}
	l.Finish(time.Unix(0, last))
	return l.Report(), nil
}

// apply makes one record's call on l.
func apply(l *Ledger, subs map[uint64]*Sub, r *rec) error {
	at := time.Unix(0, r.at)
	sub := func() (*Sub, error) {
		s := subs[r.sub]
		if s == nil {
			return nil, fmt.Errorf("%w: subscription %d used before it was opened", errJournal, r.sub)
		}
		return s, nil
	}
	switch r.typ {
	case recSent:
		l.sent(r.id, r.f, at)
	case recSettled:
		l.settled(r.id, r.ok, at)
	case recOpen:
		s := r.open
		s.l, s.channels = l, scope(s.filters)
		s.setNeedP()
		subs[r.sub] = s
	case recLive:
		s, err := sub()
		if err != nil {
			return err
		}
		s.Live(at)
	case recEnded:
		s, err := sub()
		if err != nil {
			return err
		}
		s.Ended(at, r.ok)
	case recDelivered:
		s, err := sub()
		if err != nil {
			return err
		}
		f, ok := r.f, r.ok
		s.deliver(r.id, at, f.kind, func() (facts, bool) { return f, ok })
	case recSeen:
		l.seen(r.recipient, r.id, at)
	case recFinish, recStart: // the runner's end (the replay finishes at the last), the timeline's start
	}
	return nil
}

// order breaks ties of time between runners' records by what must come
// first: a subscription live before a publish at the same instant counts
// it, a publish precedes its deliveries, and its deliveries its OK.
var order = map[byte]int{recOpen: 0, recLive: 1, recSent: 2, recDelivered: 3, recSettled: 4, recSeen: 5, recEnded: 6, recFinish: 7, recStart: -1}

func before(a, b *rec) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return order[a.typ] < order[b.typ]
}
