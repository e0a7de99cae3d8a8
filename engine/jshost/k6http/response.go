package k6http

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/grafana/sobek"
	"github.com/tidwall/gjson"
)

// responseObject builds k6's Response for the script.
func (c *client) responseObject(s *spec, res *result) sobek.Value {
	rt := c.rt
	o := rt.NewObject()
	set := func(k string, v any) { _ = o.Set(k, v) }
	set("status", res.status)
	set("status_text", res.statusText)
	set("proto", res.proto)
	set("url", res.url)
	set("remote_ip", res.remoteIP)
	set("remote_port", res.remotePort)
	set("tls_version", res.tlsVersion)
	set("tls_cipher_suite", res.tlsCipher)
	ocsp := rt.NewObject()
	for k, v := range map[string]any{"produced_at": 0, "this_update": 0, "next_update": 0, "revoked_at": 0, "revocation_reason": "", "status": ""} {
		_ = ocsp.Set(k, v)
	}
	set("ocsp", ocsp)
	errMsg, code := "", 0
	if res.err != nil {
		errMsg, code = res.err.text(), res.err.code
	}
	set("error", errMsg)
	set("error_code", code)
	t := res.timings
	tm := rt.NewObject() // k6's keys in k6's order
	_ = tm.Set("duration", t.Duration)
	_ = tm.Set("blocked", t.Blocked)
	_ = tm.Set("looking_up", t.LookingUp)
	_ = tm.Set("connecting", t.Connecting)
	_ = tm.Set("tls_handshaking", t.TLSHandshaking)
	_ = tm.Set("sending", t.Sending)
	_ = tm.Set("waiting", t.Waiting)
	_ = tm.Set("receiving", t.Receiving)
	set("timings", tm)
	set("headers", headerObject(rt, res.headers))
	set("cookies", c.cookiesObject(res.cookies))
	switch {
	case res.body == nil && (res.err != nil || s.respType == "none"):
		set("body", sobek.Null())
	case s.respType == "binary":
		set("body", rt.NewArrayBuffer(res.body))
	case s.respType == "none":
		set("body", sobek.Null())
	default:
		set("body", string(res.body))
	}
	req := rt.NewObject()
	_ = req.Set("method", res.reqMethod)
	_ = req.Set("url", res.reqURL)
	_ = req.Set("body", string(res.reqBody))
	rh := rt.NewObject()
	for _, k := range sortedHeaderKeys(res.reqHeaders) {
		_ = rh.Set(k, res.reqHeaders[k])
	}
	_ = req.Set("headers", rh)
	rc := rt.NewObject()
	for _, ck := range res.reqCookies {
		arr, _ := rc.Get(ck.Name).(*sobek.Object)
		item := rt.NewObject()
		_ = item.Set("name", ck.Name)
		_ = item.Set("value", ck.Value)
		_ = item.Set("replace", ck.Replace)
		if arr == nil {
			arr = rt.NewArray(item)
			_ = rc.Set(ck.Name, arr)
		} else {
			push, _ := sobek.AssertFunction(arr.Get("push"))
			_, _ = push(arr, item)
		}
	}
	_ = req.Set("cookies", rc)
	set("request", req)

	var parsed sobek.Value
	set("json", func(call sobek.FunctionCall) sobek.Value {
		if res.body == nil {
			c.throw(errors.New("the response has no body to parse as JSON (see responseType / discardResponseBodies)"))
		}
		if sel := call.Argument(0); !sobek.IsUndefined(sel) && !sobek.IsNull(sel) {
			r := gjson.GetBytes(res.body, sel.String())
			if !r.Exists() {
				return sobek.Undefined() // k6 v1.8.1: a missing path is undefined
			}
			return c.parseJSON(r.Raw)
		}
		if parsed == nil {
			parsed = c.parseJSON(string(res.body))
		}
		return parsed
	})
	unsupported := func(name string) func() {
		return func() { c.throw(errors.New("Response." + name + "() needs k6/html, which buzzload does not provide")) }
	}
	set("html", unsupported("html"))
	set("clickLink", unsupported("clickLink"))
	set("submitForm", unsupported("submitForm"))
	return o
}

func (c *client) parseJSON(s string) sobek.Value {
	parse, _ := sobek.AssertFunction(c.rt.Get("JSON").ToObject(c.rt).Get("parse"))
	v, err := parse(sobek.Undefined(), c.rt.ToValue(s))
	if err != nil {
		panic(err)
	}
	return v
}

func sortedHeaderKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// headerObject is Response.headers: canonical names, repeated values joined
// with ", " (what k6 scripts read as res.headers['Content-Type']).
func headerObject(rt *sobek.Runtime, h http.Header) *sobek.Object {
	o := rt.NewObject()
	for _, k := range sortedHeaderKeys(h) {
		_ = o.Set(k, strings.Join(h[k], ", "))
	}
	return o
}

// cookiesObject is Response.cookies: name -> [{name, value, domain, path,
// http_only, secure, max_age, expires}].
func (c *client) cookiesObject(cs []*http.Cookie) *sobek.Object {
	rt := c.rt
	o := rt.NewObject()
	for _, ck := range cs {
		item := rt.NewObject()
		_ = item.Set("name", ck.Name)
		_ = item.Set("value", ck.Value)
		_ = item.Set("domain", ck.Domain)
		_ = item.Set("path", ck.Path)
		_ = item.Set("http_only", ck.HttpOnly)
		_ = item.Set("secure", ck.Secure)
		_ = item.Set("max_age", ck.MaxAge)
		var exp int64
		if !ck.Expires.IsZero() {
			exp = ck.Expires.UnixMilli()
		}
		_ = item.Set("expires", exp)
		if arr, ok := o.Get(ck.Name).(*sobek.Object); ok {
			push, _ := sobek.AssertFunction(arr.Get("push"))
			_, _ = push(arr, item)
			continue
		}
		_ = o.Set(ck.Name, rt.NewArray(item))
	}
	return o
}
