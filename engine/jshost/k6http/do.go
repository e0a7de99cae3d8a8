package k6http

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
)

// Timings are one request's phases in milliseconds (k6's Response.timings).
type Timings struct {
	Blocked, LookingUp, Connecting, TLSHandshaking, Sending, Waiting, Receiving, Duration float64
}

// result is one request as it ended (the last hop after redirects).
type result struct {
	status     int
	statusText string
	proto      string
	headers    http.Header
	body       []byte
	url        string
	remoteIP   string
	remotePort int
	tlsVersion string
	tlsCipher  string
	timings    Timings
	err        *reqError
	cookies    []*http.Cookie
	// request as sent (last hop).
	reqMethod  string
	reqURL     string
	reqHeaders http.Header
	reqBody    []byte
	reqCookies []reqCookie
	samples    []metrics.Sample
}

// emitCtx is what metric samples need, taken on the VU goroutine.
type emitCtx struct {
	m        *httpMetrics
	base     metrics.TagSet // the VU's tags (scenario, group, vu.metrics.tags)
	metadata metrics.TagSet
	sys      systemTags
}

// httpMetrics are the built-in HTTP metrics (docs/k6-compat.md §5).
type httpMetrics struct {
	reqs, failed, duration, blocked, connecting, tlsHandshaking, sending, waiting, receiving *metrics.Metric
}

func lookupMetrics(r *metrics.Registry) (*httpMetrics, error) {
	m := &httpMetrics{
		reqs: r.Get(metrics.HTTPReqsName), failed: r.Get(metrics.HTTPReqFailedName),
		duration: r.Get(metrics.HTTPReqDurationName), blocked: r.Get(metrics.HTTPReqBlockedName),
		connecting: r.Get(metrics.HTTPReqConnectingName), tlsHandshaking: r.Get(metrics.HTTPReqTLSHandshakingName),
		sending: r.Get(metrics.HTTPReqSendingName), waiting: r.Get(metrics.HTTPReqWaitingName),
		receiving: r.Get(metrics.HTTPReqReceivingName),
	}
	for _, x := range []*metrics.Metric{m.reqs, m.failed, m.duration, m.blocked, m.connecting, m.tlsHandshaking, m.sending, m.waiting, m.receiving} {
		if x == nil {
			return nil, errors.New("k6/http: the built-in HTTP metrics are not registered")
		}
	}
	return m, nil
}

// tracer records the httptrace events of one hop; the transport calls it
// from its own goroutines.
type tracer struct {
	mu                                    sync.Mutex
	getConn, gotConn, connStart, connDone time.Time
	dnsStart, dnsDone                     time.Time
	tlsStart, tlsDone, wrote, firstByte   time.Time
	reused                                bool
	remote                                net.Addr
}

func (t *tracer) trace() *httptrace.ClientTrace {
	now := time.Now
	set := func(p *time.Time) {
		t.mu.Lock()
		if p.IsZero() {
			*p = now()
		}
		t.mu.Unlock()
	}
	return &httptrace.ClientTrace{
		GetConn: func(string) { set(&t.getConn) },
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			t.gotConn, t.reused = now(), info.Reused
			if info.Conn != nil {
				t.remote = info.Conn.RemoteAddr()
			}
			t.mu.Unlock()
		},
		DNSStart:             func(httptrace.DNSStartInfo) { set(&t.dnsStart) },
		DNSDone:              func(httptrace.DNSDoneInfo) { set(&t.dnsDone) },
		ConnectStart:         func(string, string) { set(&t.connStart) },
		ConnectDone:          func(string, string, error) { set(&t.connDone) },
		TLSHandshakeStart:    func() { set(&t.tlsStart) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { set(&t.tlsDone) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { set(&t.wrote) },
		GotFirstResponseByte: func() { set(&t.firstByte) },
	}
}

func ms(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return float64(d) / float64(time.Millisecond)
}

// timings turns the trace into k6's phases: blocked until the connection
// is handed over (a new one's DNS lookup, connect and TLS included: k6
// v1.8.1's blocked is never below its connecting), looking_up, connecting,
// TLS, sending until the request is written, waiting for the first byte,
// receiving the body.
func (t *tracer) timings(start, end time.Time) Timings {
	t.mu.Lock()
	defer t.mu.Unlock()
	var tm Timings
	get := t.getConn
	if get.IsZero() {
		get = start
	}
	got := t.gotConn
	if !t.dnsStart.IsZero() && !t.dnsDone.IsZero() {
		tm.LookingUp = ms(t.dnsDone.Sub(t.dnsStart))
	}
	switch {
	case got.IsZero():
		// No connection: everything was blocked (dial failed or timed out).
		tm.Blocked = ms(end.Sub(get))
		if !t.connStart.IsZero() {
			if !t.connDone.IsZero() {
				tm.Connecting = ms(t.connDone.Sub(t.connStart))
			} else {
				tm.Connecting = ms(end.Sub(t.connStart))
			}
		}
		return tm
	case t.reused || t.connStart.IsZero():
		tm.Blocked = ms(got.Sub(get))
	default:
		tm.Blocked = ms(got.Sub(get))
		if !t.connDone.IsZero() {
			tm.Connecting = ms(t.connDone.Sub(t.connStart))
		}
		if !t.tlsStart.IsZero() && !t.tlsDone.IsZero() {
			tm.TLSHandshaking = ms(t.tlsDone.Sub(t.tlsStart))
		}
	}
	wrote := t.wrote
	if wrote.IsZero() {
		wrote = end
	}
	tm.Sending = ms(wrote.Sub(got))
	first := t.firstByte
	if first.IsZero() {
		first = end
	}
	tm.Waiting = ms(first.Sub(wrote))
	tm.Receiving = ms(end.Sub(first))
	tm.Duration = tm.Sending + tm.Waiting + tm.Receiving
	return tm
}

// execute runs a spec (following redirects, each hop its own request with
// its own samples). It touches no JS, so batch runs it on goroutines.
func (c *client) execute(ctx context.Context, s *spec, ec emitCtx, warn func(string)) *result {
	ctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errTimeout)
	defer cancel()
	u := s.url
	method := s.method
	body, hasBody := s.body, s.hasBody
	var res *result
	digestTried := false
	var authz string
	var all []metrics.Sample
	defer func() { res.samples = all }()
	// Response.request is the first request's (k6 v1.8.1, observed: after
	// a redirect it still names the URL the script asked for).
	var first *result
	defer func() {
		if first != nil && first != res {
			res.reqMethod, res.reqURL, res.reqHeaders, res.reqBody, res.reqCookies =
				first.reqMethod, first.reqURL, first.reqHeaders, first.reqBody, first.reqCookies
		}
	}()
	for hop := 0; ; hop++ {
		res = c.roundTrip(ctx, s, method, u, body, hasBody, authz)
		if hop == 0 {
			first = res
		}
		if res.status == http.StatusUnauthorized && s.auth == "digest" && !digestTried && u.User != nil {
			digestTried = true
			if h, err := digestAuthorization(res.headers.Get("WWW-Authenticate"), method, u, body); err == nil {
				all = append(all, c.emit(res, s, ec)...)
				authz = h
				hop--
				continue
			}
		}
		all = append(all, c.emit(res, s, ec)...)
		if res.err != nil || !isRedirect(res.status) {
			return res
		}
		loc := res.headers.Get("Location")
		if loc == "" {
			return res
		}
		next, err := u.Parse(loc)
		if err != nil {
			return res
		}
		if hop >= s.redirects {
			if s.redirects > 0 {
				warn(fmt.Sprintf("Stopped after %d redirects and returned the redirection; pass { redirects: n } in request params or set global maxRedirects to avoid this", hop))
			}
			return res
		}
		switch res.status {
		case http.StatusSeeOther:
			if !strings.EqualFold(method, http.MethodHead) {
				method = http.MethodGet
			}
			body, hasBody = nil, false
		case http.StatusMovedPermanently, http.StatusFound:
			if strings.EqualFold(method, http.MethodPost) {
				method = http.MethodGet
				body, hasBody = nil, false
			}
		}
		if next.User == nil && u.User != nil && next.Host == u.Host {
			next.User = u.User
		}
		if next.Host != u.Host {
			authz = ""
		}
		u = next
	}
}

func isRedirect(status int) bool {
	switch status {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// roundTrip sends one hop and reads its whole body.
func (c *client) roundTrip(ctx context.Context, s *spec, method string, u *url.URL, body []byte, hasBody bool, authz string) *result {
	res := &result{reqMethod: method, reqURL: cleanURL(u), reqBody: body, url: cleanURL(u)}
	var rdr io.Reader
	if hasBody {
		rdr = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rdr)
	if err != nil {
		res.err = invalidURL(err)
		return res
	}
	req.Header = s.headers.Clone()
	if s.host != "" {
		req.Host = s.host
	}
	if _, set := req.Header["User-Agent"]; !set {
		// An empty userAgent sends none (net/http's own default would
		// otherwise go out).
		req.Header["User-Agent"] = []string{c.set.userAgent}
	}
	if u.User != nil && authz == "" && s.auth != "digest" {
		pw, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), pw)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	res.reqCookies = c.addCookies(req, s)
	res.reqHeaders = req.Header.Clone()
	tr := &tracer{}
	req = req.WithContext(httptrace.WithClientTrace(ctx, tr.trace()))
	start := time.Now()
	resp, err := c.transport().RoundTrip(req)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	end := time.Now()
	res.timings = tr.timings(start, end)
	tr.mu.Lock()
	if tr.remote != nil {
		if ta, ok := tr.remote.(*net.TCPAddr); ok {
			res.remoteIP, res.remotePort = ta.IP.String(), ta.Port
		} else if h, p, e := net.SplitHostPort(tr.remote.String()); e == nil {
			res.remoteIP = h
			res.remotePort, _ = strconv.Atoi(p)
		}
	}
	tr.mu.Unlock()
	if err != nil {
		op := method[:1] + strings.ToLower(method[1:])
		res.err = classify(&url.Error{Op: op, URL: cleanURL(u), Err: err}, errors.Is(context.Cause(ctx), errTimeout))
		if resp == nil {
			return res
		}
	}
	res.status = resp.StatusCode
	res.statusText = resp.Status
	res.proto = resp.Proto
	res.headers = resp.Header
	if resp.TLS != nil {
		res.tlsVersion = tlsVersionName(resp.TLS.Version)
		res.tlsCipher = tls.CipherSuiteName(resp.TLS.CipherSuite)
	}
	if jar := s.jar; jar != nil {
		if rc := resp.Cookies(); len(rc) > 0 {
			jar.SetCookies(u, rc)
		}
	}
	res.cookies = resp.Cookies()
	if res.err == nil && s.respType != "none" {
		b, derr := decodeBody(raw, resp.Header.Get("Content-Encoding"))
		if derr != nil {
			res.err = classify(derr, false)
		} else {
			res.body = b
		}
	}
	if res.err == nil && res.status >= 400 && res.status < 600 {
		res.err = &reqError{code: codeHTTPStatusFirst + res.status}
	}
	return res
}

// addCookies sets the Cookie header from params.cookies, then the jar (a
// request cookie with replace drops the jar's cookie of that name): k6
// v1.8.1's order ("mid=3; beta=4; zeta=1" for params mid, beta and a jar's
// zeta; observed).
func (c *client) addCookies(req *http.Request, s *spec) []reqCookie {
	var sent []reqCookie
	replace := map[string]bool{}
	for _, rc := range s.cookies {
		if rc.Replace {
			replace[rc.Name] = true
		}
		req.AddCookie(&http.Cookie{Name: rc.Name, Value: rc.Value})
		sent = append(sent, rc)
	}
	if s.jar != nil {
		for _, ck := range s.jar.Cookies(req.URL) {
			if replace[ck.Name] {
				continue
			}
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
			sent = append(sent, reqCookie{Name: ck.Name, Value: ck.Value})
		}
	}
	return sent
}

// emit builds the hop's samples with k6's tags.
func (c *client) emit(res *result, s *spec, ec emitCtx) []metrics.Sample {
	now := time.Now()
	tags := ec.base
	extra := make([]metrics.Tag, 0, len(s.tags)+10)
	for k, v := range s.tags {
		extra = append(extra, metrics.Tag{Key: k, Value: v})
	}
	sys := ec.sys
	add := func(k, v string) {
		// k6 leaves out tags that do not apply (an empty proto, error or
		// tls_version), rather than sending "".
		if sys[k] && (v != "" || k == "url" || k == "name") {
			extra = append(extra, metrics.Tag{Key: k, Value: v})
		}
	}
	add("proto", res.proto)
	add("status", strconv.Itoa(res.status))
	add("method", res.reqMethod)
	name := res.url
	if s.nameSet {
		name = s.name
	}
	add("url", name)
	add("name", name)
	if res.tlsVersion != "" {
		add("tls_version", res.tlsVersion)
	}
	if res.err != nil {
		add("error_code", strconv.Itoa(res.err.code))
		if res.err.msg != "" {
			add("error", res.err.text()) // k6's message, as the response's error
		}
	}
	var expected bool
	if s.expected != nil {
		// A network error is status 0: expected only when the callback
		// names 0 (k6 v1.8.1: expectedStatuses(0) or {min: 0, ...} keeps it
		// out of http_req_failed; observed).
		expected = s.expected.match(res.status)
		add("expected_response", strconv.FormatBool(expected))
	}
	tags = tags.Merge(metrics.NewTagSet(extra...))
	md := ec.metadata
	if s.nameSet && name != res.url && sys["url"] {
		md = md.With("raw_url", res.url)
	}
	m := ec.m
	t := res.timings
	out := make([]metrics.Sample, 0, 9)
	sample := func(mt *metrics.Metric, v float64) {
		out = append(out, metrics.Sample{Metric: mt, Time: now, Value: v, Tags: tags, Metadata: md})
	}
	sample(m.reqs, 1)
	sample(m.duration, t.Duration)
	sample(m.blocked, t.Blocked)
	sample(m.connecting, t.Connecting)
	sample(m.tlsHandshaking, t.TLSHandshaking)
	sample(m.sending, t.Sending)
	sample(m.waiting, t.Waiting)
	sample(m.receiving, t.Receiving)
	if s.expected != nil {
		v := 0.0
		if !expected {
			v = 1
		}
		sample(m.failed, v)
	}
	return out
}
