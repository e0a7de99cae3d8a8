package extension

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/k6encoding"
	"github.com/buzzload/buzzload/modules/nostr"
)

// clientRef is the hidden link from an sc.client() object to its scenario,
// so buzz.nip98 can sign as that client.
const clientRef = "__buzzClient"

type clientHandle struct {
	l *loaded
	g int
}

// addHTTPInfo puts what a k6/http script needs to call the client's
// community on an sc.client() object: httpUrl (the public base URL, the
// one NIP-98's u tag names), httpTarget (where to send, the dial address
// when the target has connect_addr) and host (the Host header).
func (in *instance) addHTTPInfo(l *loaded, g int, o *sobek.Object) {
	_ = o.DefineDataProperty(clientRef, in.rt().ToValue(&clientHandle{l: l, g: g}), sobek.FLAG_FALSE, sobek.FLAG_FALSE, sobek.FLAG_FALSE)
	t, _, _, err := in.identity(l, g)
	if err != nil {
		return
	}
	target := t.HTTPURL
	if t.Host != "" && t.ConnectAddr != "" {
		// Dialled in plaintext with the community host in Host, as
		// relayclient does (modules/relayclient/target.go).
		if u, err := url.Parse(t.HTTPURL); err == nil {
			u.Scheme, u.Host = "http", t.ConnectAddr
			target = u.String()
		}
	}
	_ = o.Set("httpUrl", t.HTTPURL)
	_ = o.Set("httpTarget", target)
	host := t.Host
	if host == "" {
		if u, err := url.Parse(t.HTTPURL); err == nil {
			host = u.Host
		}
	}
	_ = o.Set("host", host)
}

// jsNIP98 is buzz.nip98(method, url, body, client): the headers that sign
// one request as a client of a loaded scenario — Authorization (NIP-98,
// kind 27235 over the exact body) and, for agents, x-auth-tag (NIP-OA) —
// for k6/http: http.post(url, body, { headers: buzz.nip98("POST", url, body, c) }).
// url may be the public URL (c.httpUrl + path) or the one the request is
// sent to (c.httpTarget + path); the u tag always names the public one.
func (in *instance) jsNIP98(call sobek.FunctionCall) sobek.Value {
	method := strings.ToUpper(call.Argument(0).String())
	raw := call.Argument(1).String()
	if method == "" || sobek.IsUndefined(call.Argument(1)) {
		in.throw(errors.New("buzz.nip98(method, url, body, client): method and url are required"))
	}
	var body []byte
	if b := call.Argument(2); !sobek.IsUndefined(b) && !sobek.IsNull(b) {
		var err error
		if body, err = k6encoding.Bytes(b); err != nil {
			in.throw(fmt.Errorf("buzz.nip98: body: %w", err))
		}
	}
	co, ok := call.Argument(3).(*sobek.Object)
	var h *clientHandle
	if ok {
		if v := co.Get(clientRef); v != nil {
			h, _ = v.Export().(*clientHandle)
		}
	}
	if h == nil {
		in.throw(errors.New("buzz.nip98: client must come from sc.client(kind, index) of a loaded scenario"))
	}
	t, keys, oa, err := in.identity(h.l, h.g)
	if err != nil {
		in.throw(fmt.Errorf("buzz.nip98: %w", err))
	}
	u := publicURL(raw, t.HTTPURL, t.ConnectAddr)
	auth, err := nostr.HTTPAuth(keys, method, u, body, time.Now())
	if err != nil {
		in.throw(fmt.Errorf("buzz.nip98: %w", err))
	}
	out := map[string]any{"Authorization": auth}
	if len(oa) > 0 {
		out[nostr.OAHeader] = nostr.OATagHeader(oa)
	}
	return in.rt().ToValue(out)
}

// publicURL maps a URL sent to the dial address back to the public URL
// (same path and query) so the u tag matches what the relay expects.
func publicURL(raw, public, dial string) string {
	if dial == "" {
		return raw
	}
	u, err := url.Parse(raw)
	pu, perr := url.Parse(public)
	if err != nil || perr != nil || u.Host != dial {
		return raw
	}
	u.Host, u.Scheme = pu.Host, pu.Scheme
	return u.String()
}
