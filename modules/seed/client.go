package seed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

const (
	defaultTimeout     = 30 * time.Second
	defaultThrottles   = 120
	defaultRetries     = 3
	maxThrottleWait    = time.Minute
	minThrottleWait    = time.Second
	transientBackoff   = 500 * time.Millisecond
	maxTagsPerAddEvent = 100 // members named by the first kind-9000 of a chunk; Buzz applies only the first p (verifyMembers adds the rest)
	queryPageLimit     = 500
	authorsPerFilter   = 100
)

// defaultThrottleGiveUp ends a seed the relay has answered with nothing but
// quota rejections for this long: a relay throttling forever would otherwise
// keep it retrying for hours (120 resends of up to a minute, per request).
const defaultThrottleGiveUp = 5 * time.Minute

// rpc is the HTTP side shared by Seed and Teardown: one pool, one client
// per (community, identity), and the retry policy.
type rpc struct {
	sc        *scenario.Scenario
	sink      relayclient.Sink
	transport http.RoundTripper
	ownPool   *http.Transport
	timeout   time.Duration
	throttles int
	retries   int

	// The throttle watch: a seed that gets only quota rejections for
	// giveUp ends with a ThrottledError (abort cancels the seed's context
	// with it as the cause).
	giveUp    time.Duration
	abort     context.CancelCauseFunc
	lastOK    atomic.Int64 // unix nanoseconds of the last answer that was not a throttle (start: the seed's start)
	throttled atomic.Int64 // throttled answers in all
	sinceOK   atomic.Int64 // throttled answers since lastOK
	waiting   atomic.Int64 // requests waiting out a throttle's retry-in now

	mu      sync.Mutex
	clients map[clientKey]*relayclient.HTTP
}

type clientKey struct {
	community int
	pubkey    string
}

func newRPC(sc *scenario.Scenario, sink relayclient.Sink, tr http.RoundTripper, timeout time.Duration, throttles, retries, conc int) (*rpc, error) {
	n := &rpc{sc: sc, sink: sink, transport: tr, timeout: timeout, throttles: throttles, retries: retries,
		clients: map[clientKey]*relayclient.HTTP{}}
	if n.sink == nil {
		n.sink = relayclient.NopSink{}
	}
	n.sink = idempotentSink{n.sink}
	if n.timeout <= 0 {
		n.timeout = defaultTimeout
	}
	n.giveUp = defaultThrottleGiveUp
	n.lastOK.Store(time.Now().UnixNano())
	if n.throttles <= 0 {
		n.throttles = defaultThrottles
	}
	if n.retries < 0 {
		n.retries = 0
	} else if n.retries == 0 {
		n.retries = defaultRetries
	}
	if n.transport == nil {
		t, err := relayclient.NewTransport(relayclient.TransportOptions{MaxIdleConnsPerHost: max(conc*2, 16)})
		if err != nil {
			return nil, err
		}
		n.ownPool, n.transport = t, t
	}
	return n, nil
}

func (n *rpc) close() {
	if n.ownPool != nil {
		n.ownPool.CloseIdleConnections()
	}
}

// community returns the HTTP client of keys (with the NIP-OA tag oa) in
// community c.
func (n *rpc) community(c int, keys *nostr.Keys, oa []string) (*relayclient.HTTP, error) {
	k := clientKey{c, keys.PubKey()}
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.clients[k]; h != nil {
		return h, nil
	}
	ep := n.sc.Endpoint(c)
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{
		Target: relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr, Identity: ep.Identity},
		Keys:   keys, OATag: oa, Sink: n.sink, Transport: n.transport, Timeout: n.timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("community %d: %w", c, err)
	}
	n.clients[k] = h
	return h, nil
}

// operator returns the operator API client. The operator API lives at the
// deployment's own origin, so it takes target.http_url's host, dialled at
// connect_addr when one is set (the relay's in-cluster service).
func (n *rpc) operator(keys *nostr.Keys, origin string) (*relayclient.HTTP, error) {
	t := n.sc.Target
	u, err := url.Parse(t.HTTPURL)
	if err != nil {
		return nil, fmt.Errorf("target.http_url %q: %w", t.HTTPURL, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("target.http_url %q has no host", t.HTTPURL)
	}
	if origin == "" {
		origin = u.Scheme + "://" + u.Host
	}
	tgt := relayclient.Target{WSURL: t.WSURL, HTTPURL: t.HTTPURL, Identity: n.sc.Endpoint(0).Identity}
	if t.ConnectAddr != "" && t.CommunityHostTemplate != "" {
		tgt.Host, tgt.ConnectAddr = u.Host, t.ConnectAddr
	}
	return relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Keys: keys, Sink: n.sink, Transport: n.transport,
		Timeout: n.timeout, OperatorOrigin: origin})
}

// refusalRE matches a Result error that carries the relay's final answer:
// a 4xx status or an accepted:false reply. 429 never gets here (throttled).
var refusalRE = regexp.MustCompile(`: HTTP 4\d\d: |: not accepted: `)

// refused reports whether an error Result is the relay's final refusal
// rather than a transport failure or a 5xx worth retrying.
func refused(r relayclient.Result) bool {
	return r.Outcome == relayclient.OutcomeError && refusalRE.MatchString(r.Error)
}

// reason trims a Result error to the relay's own words: "POST /events:
// HTTP 400: restricted: member refused" → "restricted: member refused".
func reason(r relayclient.Result) string {
	s := r.Error
	if i := strings.Index(s, ": "); i > 0 && strings.Contains(s[:i], " /") {
		s = s[i+2:]
	}
	s = strings.TrimPrefix(s, "not accepted: ")
	if strings.HasPrefix(s, "HTTP ") {
		if i := strings.Index(s, ": "); i > 0 && i < 10 {
			s = s[i+2:]
		}
	}
	if s == "" {
		s = r.Outcome.String()
	}
	return s
}

// errCancelled is the error of a call cut short by the context.
var errCancelled = errors.New("cancelled")

// call runs one request with the retry policy: a throttled request waits
// the relay's retry-in (1 s to 1 min) and is resent up to n.throttles times;
// a transport error or 5xx is resent up to n.retries times; a refusal is
// final. The returned error is non-nil only when ctx ended.
func (n *rpc) call(ctx context.Context, do func() relayclient.Result) (relayclient.Result, error) {
	throttled, failed := 0, 0
	for {
		r := do()
		var wait time.Duration
		if r.Outcome != relayclient.OutcomeThrottled && r.Outcome != relayclient.OutcomePending {
			n.lastOK.Store(time.Now().UnixNano())
			n.sinceOK.Store(0)
		}
		switch r.Outcome {
		case relayclient.OutcomeOK:
			return r, nil
		case relayclient.OutcomePending:
			if err := ctx.Err(); err != nil {
				return r, err
			}
			return r, errCancelled
		case relayclient.OutcomeThrottled:
			n.throttled.Add(1)
			n.sinceOK.Add(1)
			if err := n.checkThrottled(time.Now()); err != nil {
				return r, err
			}
			throttled++
			if throttled > n.throttles {
				return r, nil
			}
			wait = min(max(r.RetryAfter, minThrottleWait), maxThrottleWait)
		default:
			if refused(r) || failed >= n.retries {
				return r, nil
			}
			failed++
			wait = time.Duration(failed) * transientBackoff
		}
		throttleWait := r.Outcome == relayclient.OutcomeThrottled
		if throttleWait {
			n.waiting.Add(1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			// Still counted as waiting: the note says what the stop found.
			return r, ctx.Err()
		case <-t.C:
		}
		if throttleWait {
			n.waiting.Add(-1)
		}
	}
}

// ThrottledError ends a seed the relay answered with nothing but quota
// rejections (HTTP 429, "rate-limited: quota exceeded") for For.
type ThrottledError struct {
	For       time.Duration // how long nothing but throttles came back
	Throttled int64         // quota rejections in the whole seed
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("throttled: the relay answered every request with a quota rejection (HTTP 429 / rate-limited: quota exceeded) for %v, %d rejections in all; raise the relay's rate limits for the seeding identities or lower shape.seed_concurrency",
		e.For.Round(time.Second), e.Throttled)
}

// checkThrottled gives up on the whole seed once the relay has throttled
// every answer for giveUp; other requests still waiting end with it.
func (n *rpc) checkThrottled(now time.Time) error {
	if n.giveUp <= 0 || n.abort == nil {
		return nil
	}
	d := now.Sub(time.Unix(0, n.lastOK.Load()))
	if d < n.giveUp {
		return nil
	}
	err := &ThrottledError{For: d, Throttled: n.throttled.Load()}
	n.abort(err)
	return err
}

// throttleNote says how throttled the seed was when it stopped for another
// reason (a deadline, the setup timeout, a signal): "" unless the relay's
// latest answers were throttles or a request was waiting out a throttle.
func (n *rpc) throttleNote(now time.Time) string {
	k, w := n.sinceOK.Load(), n.waiting.Load()
	switch {
	case k > 0:
		return fmt.Sprintf("the seed was throttled: the relay answered its last %d requests with quota rejections (HTTP 429 / rate-limited: quota exceeded) over %v, %d in all",
			k, now.Sub(time.Unix(0, n.lastOK.Load())).Round(time.Second), n.throttled.Load())
	case w > 0:
		return fmt.Sprintf("the seed was throttled: %d requests were waiting out the relay's retry-in after quota rejections (HTTP 429 / rate-limited: quota exceeded), %d in all",
			w, n.throttled.Load())
	}
	return ""
}

// published is what the relay answered to one event.
type published struct {
	ev  *nostr.Event // the accepted event; nil when refused
	dup bool         // accepted as "duplicate:": the very event was there
	why string       // the relay's reason when refused
}

// publish signs and posts the event build makes, with the retry policy.
// build is called for every attempt so a resend after a long throttle
// carries a fresh created_at. err is non-nil only when ctx ended or the
// event could not be built.
func (n *rpc) publish(ctx context.Context, h *relayclient.HTTP, op string, build func(at time.Time) (*nostr.Event, error)) (published, error) {
	var ev *nostr.Event
	var rep relayclient.EventReply
	var buildErr error
	r, err := n.call(ctx, func() relayclient.Result {
		ev, buildErr = build(time.Now())
		if buildErr != nil {
			return relayclient.Result{Op: op, Outcome: relayclient.OutcomeError, Error: buildErr.Error()}
		}
		var res relayclient.Result
		rep, res = h.PublishHTTP(ctx, ev, relayclient.CallOptions{Op: op, Timeout: n.timeout})
		return res
	})
	if buildErr != nil {
		return published{}, buildErr
	}
	if err != nil {
		return published{}, err
	}
	if r.Outcome != relayclient.OutcomeOK {
		return published{why: reason(r)}, nil
	}
	return published{ev: ev, dup: strings.HasPrefix(rep.Message, "duplicate:")}, nil
}

// query reads filters with the retry policy; a failure is an error that
// says what was read. Every seed read decides a write (what is already
// there is not written again): it reads Buzz's writer, not a replica
// that may lag (relayclient.Strong).
func (n *rpc) query(ctx context.Context, h *relayclient.HTTP, what string, filters []relayclient.Filter) ([]nostr.Event, error) {
	strong := make([]relayclient.Filter, len(filters))
	for i := range filters {
		strong[i] = relayclient.Strong(filters[i])
	}
	filters = strong
	var evs []nostr.Event
	r, err := n.call(ctx, func() relayclient.Result {
		var res relayclient.Result
		evs, res = h.Query(ctx, filters, relayclient.CallOptions{Op: OpState, Timeout: n.timeout})
		return res
	})
	if err != nil {
		return nil, err
	}
	if r.Outcome != relayclient.OutcomeOK {
		return nil, fmt.Errorf("reading %s: %s", what, reason(r))
	}
	return evs, nil
}

// forEach runs fn(i) for every i in [0, count) on up to conc goroutines and
// stops handing out work once ctx ends.
func forEach(ctx context.Context, count, conc int, fn func(ctx context.Context, i int)) {
	if count <= 0 {
		return
	}
	conc = max(1, min(conc, count))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				fn(ctx, i)
			}
		}()
	}
	wg.Wait()
}

// tracker reports a phase's progress, serialising the callback.
type tracker struct {
	mu          sync.Mutex
	fn          func(Progress)
	phase       string
	done, total int
}

func (t *tracker) start(phase string, total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phase, t.done, t.total = phase, 0, total
	if t.fn != nil {
		t.fn(Progress{Phase: phase, Done: 0, Total: total})
	}
}

func (t *tracker) add(n int) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done += n
	if t.fn != nil {
		t.fn(Progress{Phase: t.phase, Done: t.done, Total: t.total})
	}
}

// archived reports whether a JSON archived_at value is set.
func archived(raw []byte) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != `""`
}

// idempotentSink records a refusal that says the unit is already there as
// the success it is for an idempotent seed, which counts the unit as
// existing: "duplicate: channel already exists" to a re-seed's 9007, the
// operator API's 409 "community already exists" to its provision. A
// re-seed before a clean run must not show failed operations (issue 47
// item 1: 1.66 % buzz_op_failed, an alert on a clean run).
type idempotentSink struct{ relayclient.Sink }

func (s idempotentSink) Record(r relayclient.Result) {
	if r.Outcome == relayclient.OutcomeError && alreadyThere(r) {
		r.Outcome, r.Error, r.Refused, r.Idempotent = relayclient.OutcomeOK, "", false, true
	}
	s.Sink.Record(r)
}

// alreadyThere: the relay refused the unit because it exists.
func alreadyThere(r relayclient.Result) bool {
	why := reason(r)
	return strings.HasPrefix(why, "duplicate:") || (r.Op == OpProvision && strings.Contains(r.Error, "HTTP 409") && strings.HasSuffix(why, "already exists"))
}
