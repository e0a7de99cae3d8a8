package relayclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/localaddr"
	"github.com/buzzload/buzzload/modules/nostr"
)

// HTTP defaults.
const (
	DefaultHTTPTimeout      = 30 * time.Second // per request, unless the Request says otherwise
	DefaultMaxBodyBytes     = 16 << 20         // a /query of 2000 large events fits
	DefaultMaxIdlePerHost   = 256
	OpHTTPQuery             = "http_query"
	OpHTTPEvents            = "http_events"
	OpHTTPCount             = "http_count"
	OpNIP11                 = "nip11"
	maxErrorBodyForMessages = 4096
	// maxErrorBody is what is read of a non-2xx body: its reason.
	maxErrorBody = 64 << 10
)

// TransportOptions configure a shared HTTP connection pool.
type TransportOptions struct {
	LocalAddr           string        // optional local source IP for every dial
	MaxIdleConnsPerHost int           // default 256
	MaxConnsPerHost     int           // 0 = unlimited
	IdleConnTimeout     time.Duration // default 90 s
	DialTimeout         time.Duration // default 10 s
}

// NewTransport returns an http.Transport to share among many HTTP clients
// (one pool per process or per local address). It never uses a proxy from
// the environment: load goes exactly where the scenario says.
func NewTransport(o TransportOptions) (*http.Transport, error) {
	local, err := localAddr(o.LocalAddr)
	if err != nil {
		return nil, err
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdlePerHost
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	localaddr.Bind(d, local)
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          4 * o.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       o.IdleConnTimeout,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}, nil
}

// HTTPConfig configures an HTTP client for one identity.
type HTTPConfig struct {
	Target Target
	Keys   *nostr.Keys // NIP-98 signer (the user, agent or operator key)
	OATag  []string    // NIP-OA tag: sent as x-auth-tag by agents
	Sink   Sink        // nil drops Results

	// OperatorOrigin is RELAY_OPERATOR_API_ORIGIN: /operator/* requests go
	// to it and their u tag starts with it (the Host header plays no part).
	// Default: HTTPURL as mapped by Target.
	OperatorOrigin string

	Transport    http.RoundTripper // the shared pool (NewTransport); nil = a private one
	Timeout      time.Duration     // default per-request deadline
	MaxBodyBytes int64             // response bodies beyond this are an error
}

// HTTP is an HTTP client for one identity against one community. It is
// cheap (no pool of its own when Transport is shared) and safe for
// concurrent use.
type HTTP struct {
	cfg      HTTPConfig
	hc       http.Client
	ep       httpEndpoint
	opEP     httpEndpoint
	oaHeader string
}

// NewHTTP resolves cfg into a client.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	if cfg.Sink == nil {
		cfg.Sink = NopSink{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultHTTPTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Transport == nil {
		t, err := NewTransport(TransportOptions{LocalAddr: cfg.Target.LocalAddr})
		if err != nil {
			return nil, err
		}
		cfg.Transport = t
	}
	ep, err := cfg.Target.http()
	if err != nil {
		return nil, err
	}
	h := &HTTP{cfg: cfg, ep: ep, opEP: ep}
	if cfg.OperatorOrigin != "" {
		connect := ""
		if cfg.Target.mapped() {
			connect = cfg.Target.ConnectAddr
		}
		if h.opEP, err = resolveOrigin(cfg.OperatorOrigin, connect); err != nil {
			return nil, err
		}
	}
	h.hc = http.Client{
		Transport: cfg.Transport,
		// Redirects would re-sign nothing and hide the relay's answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if cfg.OATag != nil {
		b, err := json.Marshal(cfg.OATag)
		if err != nil {
			return nil, fmt.Errorf("relay: NIP-OA tag: %w", err)
		}
		h.oaHeader = string(b)
	}
	return h, nil
}

// PublicURL is the URL NIP-98 signs for path (and raw query).
func (h *HTTP) PublicURL(path, rawQuery string) string {
	return joinURL(h.ep.public, path, rawQuery)
}

func joinURL(base, path, rawQuery string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := base + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u
}

// Request is one HTTP call.
type Request struct {
	Op       string        // operation name for the Result
	Method   string        // default GET, or POST with a Body
	Path     string        // e.g. "/query"
	RawQuery string        // without "?", signed verbatim
	Body     []byte        // exact bytes sent and hashed into the payload tag
	Header   http.Header   // extra headers (Accept, ...)
	Operator bool          // target OperatorOrigin
	Unsigned bool          // no NIP-98 (NIP-11, health)
	Timeout  time.Duration // default HTTPConfig.Timeout
	Due      time.Time     // Result.Due (CallOptions.Due)
	// Event, for a publish, is Result.Event when the Result is ok.
	Event *nostr.Event
	// Check validates a 2xx body; a non-nil error makes the Result an error
	// that quotes the body's start.
	Check func(body []byte) error
}

// Response is what came back (Body bounded by MaxBodyBytes).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends req and records its Result: 2xx whose body passes Check is ok;
// 429 (and a body reason starting "rate-limited: quota exceeded") is
// throttled with RetryAfter; everything else is an error naming the status
// and the relay's message, or quoting the body.
func (h *HTTP) Do(ctx context.Context, req Request) (Response, Result) {
	start := time.Now()
	if req.Method == "" {
		req.Method = http.MethodGet
		if req.Body != nil {
			req.Method = http.MethodPost
		}
	}
	res := Result{Op: req.Op, Start: start, BytesSent: int64(len(req.Body)), Due: req.Due}
	var resp Response
	end := func(o Outcome, msg string, retry time.Duration) (Response, Result) {
		res.Duration = time.Since(start)
		res.Outcome, res.Error, res.RetryAfter = o, msg, retry
		res.Event = req.Event
		h.cfg.Sink.Record(res)
		return resp, res
	}
	what := req.Method + " " + req.Path
	ep := h.ep
	if req.Operator {
		ep = h.opEP
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = h.cfg.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, joinURL(ep.dial, req.Path, req.RawQuery), body)
	if err != nil {
		return end(OutcomeError, what+": "+err.Error(), 0)
	}
	if ep.host != "" {
		hr.Host = ep.host
	}
	for k, v := range req.Header {
		hr.Header[k] = v
	}
	if req.Body != nil && hr.Header.Get("Content-Type") == "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	if !req.Unsigned {
		if h.cfg.Keys == nil {
			return end(OutcomeError, what+": no keys to sign NIP-98 with", 0)
		}
		auth, err := nostr.HTTPAuth(h.cfg.Keys, req.Method, joinURL(ep.public, req.Path, req.RawQuery), req.Body, time.Now())
		if err != nil {
			return end(OutcomeError, what+": NIP-98: "+err.Error(), 0)
		}
		hr.Header.Set("Authorization", auth)
		if id := h.cfg.Target.Identity; id != nil && !strings.HasPrefix(req.Path, "/operator/") {
			// NIP-FI guards every bridge route but the exempt ones
			// (router.rs NIP_FI_EXEMPT_PREFIXES: /operator/ among them).
			tok, err := id.Assertion(ctx, h.cfg.Keys.PubKey())
			if err != nil {
				return end(OutcomeError, what+": "+err.Error(), 0)
			}
			hr.Header.Set(FIHeader, "Bearer "+tok)
		}
		if h.oaHeader != "" {
			hr.Header.Set("x-auth-tag", h.oaHeader)
		}
	}
	r, err := h.hc.Do(hr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return end(OutcomeError, fmt.Sprintf("%s: no response within %v", what, timeout), 0)
		}
		if errors.Is(err, context.Canceled) {
			return end(OutcomePending, what+": cancelled before the response", 0)
		}
		return end(OutcomeError, what+": "+err.Error(), 0)
	}
	defer r.Body.Close()
	resp.Status, resp.Header = r.StatusCode, r.Header
	if r.ContentLength > h.cfg.MaxBodyBytes {
		// Refused before reading: a hostile relay's announced 100 MB body
		// costs nothing (reliability.md F10).
		return end(OutcomeError, fmt.Sprintf("%s: HTTP %d: body of %d bytes larger than %d bytes", what, r.StatusCode, r.ContentLength, h.cfg.MaxBodyBytes), 0)
	}
	limit := h.cfg.MaxBodyBytes
	if r.StatusCode < 200 || r.StatusCode > 299 {
		limit = min(limit, maxErrorBody) // only the reason is read from a refusal
	}
	b, err := readBody(r.Body, r.ContentLength, limit)
	res.BytesReceived = int64(len(b))
	resp.Body = b
	if errors.Is(err, ErrBodyBudget) {
		return end(OutcomeError, fmt.Sprintf("%s: HTTP %d: %v", what, r.StatusCode, err), 0)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			// the caller gave up (a stop) while the body was still coming
			return end(OutcomePending, fmt.Sprintf("%s: HTTP %d: cancelled while reading the body", what, r.StatusCode), 0)
		}
		if ctx.Err() != nil {
			return end(OutcomeError, fmt.Sprintf("%s: HTTP %d: body not complete within %v", what, r.StatusCode, timeout), 0)
		}
		return end(OutcomeError, fmt.Sprintf("%s: HTTP %d: reading body: %v", what, r.StatusCode, err), 0)
	}
	if int64(len(b)) > limit && limit == h.cfg.MaxBodyBytes {
		resp.Body = b[:h.cfg.MaxBodyBytes]
		return end(OutcomeError, fmt.Sprintf("%s: HTTP %d: body larger than %d bytes", what, r.StatusCode, h.cfg.MaxBodyBytes), 0)
	}
	if r.StatusCode == http.StatusTooManyRequests {
		res.Refused = true
		return end(OutcomeThrottled, fmt.Sprintf("%s: HTTP 429: %s", what, errorText(b)), retryAfter(r.Header, b))
	}
	if r.StatusCode < 200 || r.StatusCode > 299 {
		res.Refused = true
		msg := errorText(b)
		if o, retry := Classify(msg); o == OutcomeThrottled {
			return end(o, fmt.Sprintf("%s: HTTP %d: %s", what, r.StatusCode, msg), max(retry, retryAfter(r.Header, nil)))
		}
		return end(OutcomeError, fmt.Sprintf("%s: HTTP %d: %s", what, r.StatusCode, msg), 0)
	}
	if req.Check != nil {
		if err := req.Check(b); err != nil {
			var rej *rejection
			if errors.As(err, &rej) {
				res.Refused = true
				return end(rej.outcome, what+": "+rej.msg, rej.retry)
			}
			return end(OutcomeError, fmt.Sprintf("%s: HTTP %d but %v: %s", what, r.StatusCode, err, quote(b)), 0)
		}
	}
	return end(OutcomeOK, "", 0)
}

// rejection is a Check's verdict on a well-formed 2xx body that the relay
// used to refuse the request (POST /events with accepted:false).
type rejection struct {
	outcome Outcome
	msg     string
	retry   time.Duration
}

func (r *rejection) Error() string { return r.msg }

// errorText extracts the relay's message from an error body:
// {"error":"..."} (bridge, operator, with "code" when present),
// {"error":{"code":"..."}} (/buzz/v1), {"error":"..","message":".."}
// (membership); otherwise it quotes the body's start.
func errorText(b []byte) string {
	if len(b) > maxErrorBodyForMessages {
		return quote(b)
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Code    string          `json:"code"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &v) != nil || len(v.Error) == 0 {
		if len(bytes.TrimSpace(b)) == 0 {
			return "(empty body)"
		}
		return quote(b)
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		out := s
		if v.Code != "" && !strings.HasPrefix(s, v.Code) {
			out = v.Code + ": " + s
		}
		if v.Message != "" {
			out += ": " + v.Message
		}
		return trimReason(out)
	}
	var e struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if json.Unmarshal(v.Error, &e) == nil && e.Code != "" {
		return trimReason(e.Code)
	}
	return quote(b)
}

// --- bridge routes ---

// CallOptions name and bound one HTTP call.
type CallOptions struct {
	Op      string        // default: the call's own (http_query, http_events, http_count, operator_*, buzz_v1_*)
	Timeout time.Duration // default HTTPConfig.Timeout
	// DuplicateOK (PublishHTTP): accepted:false with a "duplicate:" message
	// is ok, as PublishOptions.DuplicateOK.
	DuplicateOK bool
	// Due is when the schedule wanted the call sent (Result.Due); zero: unscheduled.
	Due time.Time
}

// Query POSTs filters to /query and returns the events. A body that is not
// a JSON array of well-formed events is an error quoting its start.
func (h *HTTP) Query(ctx context.Context, filters []Filter, opt CallOptions) ([]nostr.Event, Result) {
	if opt.Op == "" {
		opt.Op = OpHTTPQuery
	}
	body, err := FiltersJSON(filters)
	if err != nil {
		return nil, h.recordLocal(opt.Op, err)
	}
	var evs []nostr.Event
	_, r := h.Do(ctx, Request{Op: opt.Op, Method: http.MethodPost, Path: "/query", Body: body, Timeout: opt.Timeout, Due: opt.Due,
		Check: func(b []byte) error {
			var err error
			evs, err = ParseEvents(b)
			return err
		}})
	h.Saw(evs)
	return evs, r
}

// Saw tells the delivery ledger that this client's identity read evs
// (a /query answer): a recovery of any it had missed live. Callers that
// read /query through Do call it themselves.
func (h *HTTP) Saw(evs []nostr.Event) {
	lg := LedgerOf(h.cfg.Sink)
	if lg == nil || h.cfg.Keys == nil || len(evs) == 0 {
		return
	}
	me, now := h.cfg.Keys.PubKey(), time.Now()
	for i := range evs {
		lg.SeenID(me, evs[i].ID, now)
	}
}

// QueryObject POSTs filters to /query when the reply is an object, not an
// event array (the desktop's read_state_snapshot read), decoding it into
// out (nil: any JSON object).
func (h *HTTP) QueryObject(ctx context.Context, filters []Filter, out any, opt CallOptions) (Response, Result) {
	if opt.Op == "" {
		opt.Op = OpHTTPQuery
	}
	body, err := FiltersJSON(filters)
	if err != nil {
		return Response{}, h.recordLocal(opt.Op, err)
	}
	return h.JSON(ctx, Request{Op: opt.Op, Method: http.MethodPost, Path: "/query", Body: body, Timeout: opt.Timeout}, nil, out)
}

// CountHTTP POSTs filters to /count and returns {"count": n}.
func (h *HTTP) CountHTTP(ctx context.Context, filters []Filter, opt CallOptions) (int64, Result) {
	if opt.Op == "" {
		opt.Op = OpHTTPCount
	}
	body, err := FiltersJSON(filters)
	if err != nil {
		return 0, h.recordLocal(opt.Op, err)
	}
	var n int64
	_, r := h.Do(ctx, Request{Op: opt.Op, Method: http.MethodPost, Path: "/count", Body: body, Timeout: opt.Timeout, Due: opt.Due,
		Check: func(b []byte) error {
			var err error
			n, err = ParseCount(b)
			return err
		}})
	return n, r
}

// EventReply is the POST /events answer.
type EventReply struct {
	EventID  string `json:"event_id"`
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// PublishHTTP POSTs ev to /events. Accepted (duplicates included) is ok;
// accepted:false and 4xx reasons are classified like an OK false.
func (h *HTTP) PublishHTTP(ctx context.Context, ev *nostr.Event, opt CallOptions) (EventReply, Result) {
	if opt.Op == "" {
		opt.Op = OpHTTPEvents
	}
	var rep EventReply
	lg := LedgerOf(h.cfg.Sink)
	if lg != nil {
		lg.Sent(ev, h.cfg.Target.Host, "http", time.Now())
	}
	_, r := h.Do(ctx, Request{Op: opt.Op, Method: http.MethodPost, Path: "/events", Body: ev.AppendJSON(nil), Timeout: opt.Timeout, Due: opt.Due, Event: ev,
		Check: func(b []byte) error {
			if err := strictObject(b, &rep); err != nil {
				return err
			}
			if !rep.Accepted && !(opt.DuplicateOK && IsDuplicate(rep.Message)) {
				o, retry := Classify(rep.Message)
				return &rejection{outcome: o, msg: "not accepted: " + trimReason(rep.Message), retry: retry}
			}
			return nil
		}})
	if lg != nil {
		lg.Settled(ev.ID, r.Outcome == OutcomeOK, time.Now())
	}
	return rep, r
}

// recordLocal records a request that could not even be built.
func (h *HTTP) recordLocal(op string, err error) Result {
	r := Result{Op: op, Start: time.Now(), Outcome: OutcomeError, Error: err.Error()}
	h.cfg.Sink.Record(r)
	return r
}

// strictObject decodes a JSON object into v; anything else is an error.
func strictObject(b []byte, v any) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return errors.New("body is not a JSON object")
	}
	if err := json.Unmarshal(t, v); err != nil {
		return fmt.Errorf("body is not the expected JSON object: %w", err)
	}
	return nil
}

// JSON does a request whose 2xx body must be a JSON object decoded into
// out (nil: any JSON object). in, when non-nil, is marshalled as the body.
func (h *HTTP) JSON(ctx context.Context, req Request, in, out any) (Response, Result) {
	return h.jsonCall(ctx, req, in, out, nil)
}

// jsonCall is JSON with a check of the decoded reply (required fields).
func (h *HTTP) jsonCall(ctx context.Context, req Request, in, out any, validate func() error) (Response, Result) {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return Response{}, h.recordLocal(req.Op, fmt.Errorf("%s %s: request body: %w", req.Method, req.Path, err))
		}
		req.Body = b
	}
	req.Check = func(b []byte) error {
		if out == nil {
			var m map[string]json.RawMessage
			return strictObject(b, &m)
		}
		if err := strictObject(b, out); err != nil {
			return err
		}
		if validate != nil {
			return validate()
		}
		return nil
	}
	return h.Do(ctx, req)
}

// NIP11 reads the relay information document (GET / with
// Accept: application/nostr+json, unsigned) into out (nil: any object).
func (h *HTTP) NIP11(ctx context.Context, op string, out any) Result {
	if op == "" {
		op = OpNIP11
	}
	_, r := h.JSON(ctx, Request{Op: op, Method: http.MethodGet, Path: "/", Unsigned: true,
		Header: http.Header{"Accept": {"application/nostr+json"}}}, nil, out)
	return r
}

// readBody reads at most limit+1 bytes of body (one more than allowed tells
// an oversize body), in one allocation when the length is announced.
func readBody(body io.Reader, announced, limit int64) ([]byte, error) {
	if announced >= 0 && announced <= limit {
		b := make([]byte, announced)
		n, err := io.ReadFull(body, b)
		if err == nil {
			// A body longer than announced is the transport's error to
			// report; read one more byte to notice it.
			var one [1]byte
			if m, _ := body.Read(one[:]); m > 0 {
				return append(b[:n], one[0]), nil
			}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("body shorter than its Content-Length %d: %w", announced, err)
		}
		return b[:n], err
	}
	return io.ReadAll(io.LimitReader(body, limit+1))
}
