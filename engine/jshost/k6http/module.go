// Package k6http is `k6/http` as k6 v1.x documents it (k6 docs,
// javascript-api/k6-http): the request functions, batch, params, the
// Response object, k6's error codes and its built-in HTTP metrics, one
// connection pool per VU, on the standard library's HTTP client and TLS.
//
// Each redirect hop is its own request with its own samples; timings come
// from net/http/httptrace; data_sent and data_received count the bytes on
// the VU's connections.
//
// Decisions where k6's docs leave room or we differ:
//   - The default User-Agent is DefaultUserAgent(version), k6's format with
//     our name; userAgent "" sends none.
//   - Response.headers values are strings, repeated headers joined with
//     ", " (what k6 returns at run time, whatever its table says);
//     Response.request.headers values are arrays.
//   - An invalid URL gives a Response with error_code 1020 (and a "Request
//     Failed" warning) unless the throw option is set; bad params throw.
//   - noVUConnectionReuse drops the VU's idle connections when its next
//     iteration makes its first request; the cookie jar is reset the same
//     way (unless noCookiesReset).
//   - Not provided: Response.html/clickLink/submitForm (k6/html), NTLM
//     auth, OCSP data (Response.ocsp is all zero values).
//   - A request cut off because gracefulStop ran out records nothing and
//     stops the script at once.
//   - localIPs: VU n dials from the n-th address, as k6 does
//     (localaddr.List.ForVU), and also sets IP_BIND_ADDRESS_NO_PORT, which
//     k6 does not: the same source address, the port chosen at connect by
//     the whole 4-tuple, so one address serves many more connections.
package k6http

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"sort"
	"strings"
	"sync"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// Config configures the module for a run.
type Config struct {
	// UserAgent is the default User-Agent (the userAgent option overrides
	// it; an empty option sends none).
	UserAgent string
	// Resolvers are the run's (the dns option's caching resolver, shared
	// by every VU, as k6 shares its); nil: Go's dialer resolves names.
	Resolvers *dnsresolve.Shared
}

// DefaultUserAgent is ours, in k6 v2.2's format (observed: "Grafana
// k6/2.2.0", no URL since v2): name/version.
func DefaultUserAgent(version string) string {
	return "buzzload/" + version
}

// Module is k6/http; it is shared by every VU.
type Module struct {
	cfg Config
}

// New returns the module.
func New(cfg Config) *Module { return &Module{cfg: cfg} }

// Logger is what a VU offers for warnings; the script host's VU has it.
type Logger interface {
	LogWarn(msg string, fields ...string)
}

// Stopper is what a VU offers to stop the script at once when a request
// returned because the VU's context ended (gracefulStop ran out).
type Stopper interface {
	StopIfDone()
}

func (c *client) stopIfDone() {
	if s, ok := c.vu.(Stopper); ok && c.vu.Context().Err() != nil {
		s.StopIfDone()
	}
}

// NewInstance implements jsmodule.Module.
func (m *Module) NewInstance(vu jsmodule.VU) (jsmodule.Instance, error) {
	c := &client{mod: m, vu: vu, rt: vu.Runtime(), lastIter: -2, callback: defaultExpected()}
	return c, nil
}

// client is one VU's k6/http: its options, connection pool, cookie jar and
// response callback.
type client struct {
	mod *Module
	vu  jsmodule.VU
	rt  *sobek.Runtime

	once     sync.Once
	set      settings
	setErr   error
	met      *httpMetrics
	tr       *http.Transport
	jar      http.CookieJar
	lastIter int64
	callback *expectedStatuses
}

// Exports implements jsmodule.Instance.
func (c *client) Exports() jsmodule.Exports {
	// Built one by one as the script reads them (most read two or three):
	// no map or JS function per VU for the others.
	return jsmodule.Exports{Names: exportNames, Lookup: c.export}
}

// exportNames are k6/http's named exports.
var exportNames = func() []string {
	names := []string{"get", "head", "options", "del", "post", "put", "patch", "request", "asyncRequest",
		"batch", "url", "file", "expectedStatuses", "setResponseCallback", "cookieJar", "CookieJar"}
	for k := range tlsOCSPConstants {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}()

// export is the Go value of one named export.
func (c *client) export(name string) any {
	switch name {
	case "get", "head", "options", "del", "post", "put", "patch":
		method := strings.ToUpper(name)
		if name == "del" {
			method = "DELETE"
		}
		if method == "GET" || method == "HEAD" {
			return func(call sobek.FunctionCall) sobek.Value {
				return c.request(method, call.Argument(0), nil, call.Argument(1))
			}
		}
		return func(call sobek.FunctionCall) sobek.Value {
			return c.request(method, call.Argument(0), call.Argument(1), call.Argument(2))
		}
	case "request":
		return func(call sobek.FunctionCall) sobek.Value {
			return c.request(call.Argument(0).String(), call.Argument(1), call.Argument(2), call.Argument(3))
		}
	case "asyncRequest":
		return func(call sobek.FunctionCall) sobek.Value {
			return c.asyncRequest(call.Argument(0).String(), call.Argument(1), call.Argument(2), call.Argument(3))
		}
	case "batch":
		return c.batch
	case "url":
		return c.urlTemplate
	case "file":
		return c.file
	case "expectedStatuses":
		return c.expectedStatuses
	case "setResponseCallback":
		return c.setResponseCallback
	case "cookieJar":
		return func() sobek.Value { c.prepare(); return c.rt.ToValue(&cookieJar{c: c, jar: c.jar}) }
	case "CookieJar":
		return func(sobek.ConstructorCall) *sobek.Object {
			j, _ := cookiejar.New(nil)
			return c.rt.ToValue(&cookieJar{c: c, jar: j}).ToObject(c.rt)
		}
	}
	return tlsOCSPConstants[name]
}

// tlsOCSPConstants are k6/http's TLS version and OCSP constants.
var tlsOCSPConstants = map[string]string{
	"TLS_1_0": "tls1.0", "TLS_1_1": "tls1.1", "TLS_1_2": "tls1.2", "TLS_1_3": "tls1.3",
	"OCSP_STATUS_GOOD": "good", "OCSP_STATUS_REVOKED": "revoked", "OCSP_STATUS_UNKNOWN": "unknown",
	"OCSP_STATUS_SERVER_FAILED": "server_failed",
	"OCSP_REASON_UNSPECIFIED":   "unspecified", "OCSP_REASON_KEY_COMPROMISE": "key_compromise",
	"OCSP_REASON_CA_COMPROMISE": "ca_compromise", "OCSP_REASON_AFFILIATION_CHANGED": "affiliation_changed",
	"OCSP_REASON_SUPERSEDED": "superseded", "OCSP_REASON_CESSATION_OF_OPERATION": "cessation_of_operation",
	"OCSP_REASON_CERTIFICATE_HOLD": "certificate_hold", "OCSP_REASON_REMOVE_FROM_CRL": "remove_from_crl",
	"OCSP_REASON_PRIVILEGE_WITHDRAWN": "privilege_withdrawn", "OCSP_REASON_AA_COMPROMISE": "aa_compromise",
}

// throw raises a JS Error with err's message.
func (c *client) throw(err error) {
	ctor, ok := sobek.AssertConstructor(c.rt.Get("Error"))
	if ok {
		if obj, cerr := ctor(nil, c.rt.ToValue(err.Error())); cerr == nil {
			panic(obj)
		}
	}
	panic(c.rt.NewGoError(err))
}

func (c *client) warn(msg string, fields ...string) {
	if l, ok := c.vu.(Logger); ok {
		l.LogWarn(msg, fields...)
	}
}

// prepare reads the options once (after init, when they are final) and, at
// each new iteration, resets the cookie jar (unless noCookiesReset) and
// drops pooled connections (noVUConnectionReuse), as k6 does per iteration.
func (c *client) prepare() {
	c.once.Do(func() {
		o, err := ParseOptions(c.vu.TestOptions())
		c.set, c.setErr = o.settings(c.mod.cfg.UserAgent), err
		c.met, err = lookupMetrics(c.vu.Metrics().Registry())
		if c.setErr == nil {
			c.setErr = err
		}
		c.jar, _ = cookiejar.New(nil)
	})
	if c.setErr != nil {
		c.throw(c.setErr)
	}
	st := c.vu.State()
	if st == nil {
		c.throw(errors.New("making HTTP requests in the init context is not supported"))
	}
	if st.Iteration != c.lastIter {
		if c.lastIter != -2 {
			if !c.set.noCookiesReset {
				c.jar, _ = cookiejar.New(nil)
			}
			if c.set.noVUReuse && c.tr != nil {
				c.tr.CloseIdleConnections()
			}
		}
		c.lastIter = st.Iteration
	}
}

func (c *client) transport() *http.Transport {
	return c.tr
}

func (c *client) ensureTransport() {
	if c.tr == nil {
		vu := c.vu
		c.tr = newTransport(c.set, vu.State().VUID, c.mod.cfg.Resolvers, vu.AddDataTransfer)
	}
}

func (c *client) emitCtx() emitCtx {
	st := c.vu.State()
	ec := emitCtx{m: c.met, sys: c.set.sys}
	if st.Tags != nil {
		ec.base = st.Tags.TagSet()
	}
	if st.Metadata != nil && st.Metadata.Len() > 0 {
		ec.metadata = st.Metadata.TagSet()
	}
	return ec
}

// request is http.request and the method shortcuts: it blocks the VU, as in
// k6.
func (c *client) request(method string, urlV, bodyV, paramsV sobek.Value) sobek.Value {
	c.prepare()
	s, err := c.buildSpec(method, urlV, bodyV, paramsV)
	if err != nil {
		return c.failedBuild(err)
	}
	c.ensureTransport()
	res := c.execute(c.vu.Context(), s, c.emitCtx(), func(m string) { c.warn(m) })
	return c.finish(s, res)
}

// failedBuild handles a request that could not be built (bad URL, params):
// k6 throws for bad params and returns an errored response for a bad URL
// unless throw is set.
func (c *client) failedBuild(err error) sobek.Value {
	var re *reqError
	if !errors.As(err, &re) || c.set.throw {
		c.throw(err)
	}
	c.warn("Request Failed", "error", re.msg)
	return c.responseObject(&spec{respType: "text"}, &result{err: re})
}

// finish pushes the samples, logs a failed request and builds the Response.
func (c *client) finish(s *spec, res *result) sobek.Value {
	if c.vu.Context().Err() != nil && res.err != nil && res.status == 0 {
		// Cut off because the iteration was interrupted (gracefulStop ran
		// out): not a failed request; the script stops here.
		c.stopIfDone()
		return sobek.Undefined()
	}
	c.stopIfDone()
	c.vu.Metrics().Push(res.samples...)
	if res.err != nil && res.status == 0 {
		if s.throw {
			// k6 v1.8.1 throws the request's failure as a GoError
			// ("GoError: Get \"…\": EOF").
			panic(c.rt.NewGoError(errors.New(res.err.msg)))
		}
		c.warn("Request Failed", "error", res.err.msg)
	}
	return c.responseObject(s, res)
}

// asyncRequest is http.asyncRequest: the request runs off the VU goroutine
// and the promise settles on its event loop.
func (c *client) asyncRequest(method string, urlV, bodyV, paramsV sobek.Value) sobek.Value {
	c.prepare()
	p, resolve, reject := c.rt.NewPromise()
	s, err := c.buildSpec(method, urlV, bodyV, paramsV)
	if err != nil {
		var re *reqError
		if !errors.As(err, &re) || c.set.throw {
			_ = reject(c.rt.NewGoError(err))
			return c.rt.ToValue(p)
		}
		_ = resolve(c.responseObject(&spec{respType: "text"}, &result{err: re}))
		return c.rt.ToValue(p)
	}
	c.ensureTransport()
	ctx, ec := c.vu.Context(), c.emitCtx()
	enqueue := c.vu.RegisterCallback()
	go func() {
		var warns []string
		res := c.execute(ctx, s, ec, func(m string) { warns = append(warns, m) })
		enqueue(func() error {
			if ctx.Err() != nil && res.err != nil && res.status == 0 {
				return nil // interrupted with its iteration: not a failed request
			}
			for _, w := range warns {
				c.warn(w)
			}
			c.vu.Metrics().Push(res.samples...)
			if res.err != nil && res.status == 0 {
				if s.throw {
					_ = reject(c.rt.NewGoError(errors.New(res.err.msg)))
					return nil
				}
				c.warn("Request Failed", "error", res.err.msg)
			}
			_ = resolve(c.responseObject(s, res))
			return nil
		})
	}()
	return c.rt.ToValue(p)
}

// urlTemplate is the http.url tagged template.
func (c *client) urlTemplate(call sobek.FunctionCall) sobek.Value {
	strs, ok := call.Argument(0).(*sobek.Object)
	if !ok {
		c.throw(errors.New("http.url is a tagged template: http.url`https://host/${id}`"))
	}
	n := int(strs.Get("length").ToInteger())
	var u, name strings.Builder
	for i := 0; i < n; i++ {
		part := strs.Get(fmt.Sprint(i)).String()
		u.WriteString(part)
		name.WriteString(part)
		if i+1 < n {
			u.WriteString(call.Argument(i + 1).String())
			name.WriteString("${}")
		}
	}
	return c.rt.ToValue(&URLTemplate{URL: u.String(), Name: name.String()})
}

// file is http.file(data, [filename], [contentType]).
func (c *client) file(call sobek.FunctionCall) sobek.Value {
	f := &FileData{ContentType: "application/octet-stream"}
	switch x := call.Argument(0).Export().(type) {
	case string:
		f.Data = []byte(x)
	case sobek.ArrayBuffer:
		f.Data = append([]byte(nil), x.Bytes()...)
	case []byte:
		f.Data = append([]byte(nil), x...)
	default:
		f.Data = []byte(call.Argument(0).String())
	}
	if a := call.Argument(1); !sobek.IsUndefined(a) && !sobek.IsNull(a) {
		f.Filename = a.String()
	}
	if a := call.Argument(2); !sobek.IsUndefined(a) && !sobek.IsNull(a) {
		f.ContentType = a.String()
	}
	return c.rt.ToValue(f)
}
