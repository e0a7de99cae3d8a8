package audit

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/preflight"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Visibility measures how soon an acknowledged channel message can be read
// (issue 40, the ledger's visibility): for a sample of them, chosen by id,
// a separate reader (a member of the channel, over HTTP /query by id)
// polls from the OK on until the relay returns it. Buzz may serve /query
// from a read replica (docs/buzz-names.md, READ_DATABASE_URL): what a
// member sees after the author's OK is what this measures.
type Visibility struct {
	every  uint64
	config func() Config
	sem    chan struct{}
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	last    time.Time // the last probe's start
	once    bool
	cfg     Config
	chans   map[string]scenario.Channel
	readers map[string]*relayclient.HTTP
	hist    *hdr.Histogram // µs
	rep     report.VisibilityReport
	// strong is the same measure reading the writer ("consistency":"strong").
	strongHist *hdr.Histogram
	strong     report.VisibilityReport
}

// Probe timings: the first read right after the OK, then at growing
// intervals up to visMaxGap, for at most VisibilityTimeout.
const (
	VisibilityTimeout = 10 * time.Second
	visFirstGap       = 10 * time.Millisecond
	visMaxGap         = 200 * time.Millisecond
	visInFlight       = 8
	visMinGap         = 200 * time.Millisecond // at most 5 probes started a second: a bounded cost at any rate
)

// NewVisibility probes one acknowledged channel message in every (by id);
// config gives the run's target, keys and transport on first use.
func NewVisibility(every int, config func() Config) *Visibility {
	if every <= 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Visibility{every: uint64(every), config: config, sem: make(chan struct{}, visInFlight), ctx: ctx, cancel: cancel,
		hist: hdr.New(1, int64(time.Hour/time.Microsecond), 2), strongHist: hdr.New(1, int64(time.Hour/time.Microsecond), 2)}
}

// Acked takes an acknowledged event at the OK's arrival; a sampled channel
// message is probed in the background (skipped, and counted, when
// visInFlight probes are already under way).
func (v *Visibility) Acked(ev *nostr.Event, at time.Time) {
	if v == nil || ev.Kind != nostr.KindStreamMessage {
		return
	}
	var id [8]byte
	if _, err := hex.Decode(id[:], []byte(ev.ID[:16])); err != nil || binary.BigEndian.Uint64(id[:])%v.every != 0 {
		return
	}
	ch := ""
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "h" {
			ch = t[1]
			break
		}
	}
	if ch == "" {
		return
	}
	v.mu.Lock()
	if at.Sub(v.last) < visMinGap {
		v.rep.Skipped++
		v.mu.Unlock()
		return
	}
	v.last = at
	v.mu.Unlock()
	select {
	case v.sem <- struct{}{}:
	default:
		v.mu.Lock()
		v.rep.Skipped++
		v.mu.Unlock()
		return
	}
	v.wg.Add(2)
	go func() {
		defer v.wg.Done()
		defer func() { <-v.sem }()
		v.probe(ev.ID, ch, at, false)
	}()
	go func() { // the same read of the writer ("consistency":"strong"), beside it
		defer v.wg.Done()
		v.probe(ev.ID, ch, at, true)
	}()
}

// reader is the HTTP client that reads channel chID (nil: none).
func (v *Visibility) reader(chID string) *relayclient.HTTP {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.once {
		v.once = true
		v.cfg = v.config()
		v.readers = map[string]*relayclient.HTTP{}
		if v.cfg.Err == nil {
			v.chans = map[string]scenario.Channel{}
			for _, ch := range v.cfg.Scenario.Channels() {
				v.chans[v.cfg.Scenario.ChannelID(ch)] = ch
			}
		}
	}
	if h, ok := v.readers[chID]; ok {
		return h
	}
	var h *relayclient.HTTP
	if ch, ok := v.chans[chID]; ok {
		if g := readerOf(v.cfg.Scenario, ch); g >= 0 {
			h, _ = relayclient.NewHTTP(relayclient.HTTPConfig{Target: preflight.CommunityTarget(v.cfg.Scenario, ch.Community),
				Keys: v.cfg.Keys.Keys(g), Transport: v.cfg.Transport, Timeout: VisibilityTimeout})
		}
	}
	v.readers[chID] = h
	return h
}

// probe polls for event id of channel chID from its OK at on.
func (v *Visibility) probe(id, chID string, at time.Time, strong bool) {
	h := v.reader(chID)
	if h == nil {
		return // not a scenario channel (a low-level script's own)
	}
	deadline := at.Add(VisibilityTimeout)
	gap := visFirstGap
	f := relayclient.Filter{IDs: []string{id}, Tags: map[string][]string{"h": {chID}}, Limit: 1}
	rep, hist := &v.rep, v.hist
	if strong {
		f = relayclient.Strong(f)
		rep, hist = &v.strong, v.strongHist
	}
	for try := 0; ; try++ {
		evs, res := h.Query(v.ctx, []relayclient.Filter{f}, relayclient.CallOptions{Op: "visibility_read"})
		now := time.Now()
		v.mu.Lock()
		switch {
		case res.Outcome != relayclient.OutcomeOK:
			if v.ctx.Err() == nil {
				rep.Errors++
				if rep.FirstError == "" {
					rep.FirstError = res.Error
				}
			}
			v.mu.Unlock()
			return
		case len(evs) > 0:
			rep.Probed++
			rep.Visible++
			if try == 0 {
				rep.AtOK++
			}
			_ = hist.RecordValue(max(now.Sub(at), 0).Microseconds())
			v.mu.Unlock()
			return
		case now.After(deadline):
			rep.Probed++
			rep.TimedOut++
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		select {
		case <-time.After(gap):
		case <-v.ctx.Done():
			return
		}
		gap = min(2*gap, visMaxGap)
	}
}

// Finish waits for the probes under way (at most VisibilityTimeout, less
// when ctx ends first) and returns the measure.
func (v *Visibility) Finish(ctx context.Context) *report.VisibilityReport {
	if v == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { v.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		v.cancel()
		<-done
	}
	v.cancel()
	v.mu.Lock()
	defer v.mu.Unlock()
	fill := func(r report.VisibilityReport, h *hdr.Histogram) report.VisibilityReport {
		r.Every = int(v.every)
		r.TimeoutMs = float64(VisibilityTimeout.Milliseconds())
		if h.TotalCount() > 0 {
			r.P50Ms = float64(h.ValueAtQuantile(50)) / 1e3
			r.P99Ms = float64(h.ValueAtQuantile(99)) / 1e3
		}
		return r
	}
	rep := fill(v.rep, v.hist)
	if v.strong.Probed+v.strong.Errors > 0 {
		s := fill(v.strong, v.strongHist)
		rep.Strong = &s
	}
	return &rep
}
