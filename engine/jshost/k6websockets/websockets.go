// Package k6websockets is `k6/experimental/websockets` (k6 docs,
// javascript-api/k6-experimental/websockets): the browser-style WebSocket
// on the VU's event loop — onopen/onmessage/onerror/onclose/onping/onpong
// and addEventListener, send, ping, close, readyState — with k6's ws_*
// metrics (ws_connecting, ws_session_duration, ws_sessions, ws_msgs_sent,
// ws_msgs_received, ws_ping). The iteration lasts while a socket is open,
// as in k6; when the iteration's context ends the socket is closed.
// Sockets dial through the VU's dialer (k6http.Options.Dialer), so hosts,
// blockHostnames, blacklistIPs, dns and localIPs apply as to k6/http; a refused
// or failed connect is an error event with the dial's text, then close.
package k6websockets

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/k6http"
	"github.com/buzzload/buzzload/engine/jshost/vudialer"
	"github.com/buzzload/buzzload/engine/metrics"
)

// New is k6/experimental/websockets (also served as k6/websockets) for a
// run whose names resolve through resolvers (the dns option; nil: Go's
// dialer resolves), the one k6/http of the run uses.
func New(resolvers *dnsresolve.Shared) jsmodule.Module {
	return jsmodule.ModuleFunc(func(vu jsmodule.VU) (jsmodule.Instance, error) { return newInstance(vu, resolvers) })
}

// k6's ready states.
const (
	stateConnecting = 0
	stateOpen       = 1
	stateClosing    = 2
	stateClosed     = 3
)

type wsMetrics struct {
	connecting, session, sessions, sent, received, ping *metrics.Metric
}

func newInstance(vu jsmodule.VU, resolvers *dnsresolve.Shared) (jsmodule.Instance, error) {
	reg := vu.Metrics().Registry()
	var m wsMetrics
	if err := reg.Bind([]metrics.Binding{
		{Dst: &m.connecting, Name: "ws_connecting", Type: metrics.Trend, Contains: metrics.Time},
		{Dst: &m.session, Name: "ws_session_duration", Type: metrics.Trend, Contains: metrics.Time},
		{Dst: &m.sessions, Name: "ws_sessions", Type: metrics.Counter, Contains: metrics.Default},
		{Dst: &m.sent, Name: "ws_msgs_sent", Type: metrics.Counter, Contains: metrics.Default},
		{Dst: &m.received, Name: "ws_msgs_received", Type: metrics.Counter, Contains: metrics.Default},
		{Dst: &m.ping, Name: "ws_ping", Type: metrics.Trend, Contains: metrics.Time},
	}); err != nil {
		return nil, err
	}
	mod := &module{vu: vu, m: &m, resolvers: resolvers}
	rt := vu.Runtime()
	ctor := func(call sobek.ConstructorCall) *sobek.Object { return mod.newSocket(call) }
	named := map[string]any{
		"WebSocket": ctor,
		"Blob":      func(call sobek.ConstructorCall) *sobek.Object { return rt.NewObject() },
	}
	return jsmodule.StaticExports{Named: named}, nil
}

type module struct {
	vu jsmodule.VU
	m  *wsMetrics
	// opts are the HTTP options the dialer honours, read at the VU's first
	// socket (after init, when they are final), as k6/http reads them once.
	opts   k6http.Options
	parsed bool
	// dialer is the VU's: k6/http's rules (hosts, blockHostnames,
	// blacklistIPs, localIPs), as every module of a k6 VU dials through
	// the VU's one dialer.
	dialer    *vudialer.Dialer
	optsErr   error // the options did not parse: every connect fails with it
	resolvers *dnsresolve.Shared
}

func (m *module) options() k6http.Options {
	if !m.parsed {
		// The run validates these options before any VU starts; should they
		// fail here anyway, sockets fail closed, not without the rules.
		m.opts, m.optsErr = k6http.ParseOptions(m.vu.TestOptions())
		m.parsed = true
		var vuID uint64
		if st := m.vu.State(); st != nil {
			vuID = st.VUID
		}
		m.dialer = m.opts.Dialer(vuID, m.resolvers, m.vu.AddDataTransfer)
	}
	return m.opts
}

// socket is one WebSocket.
type socket struct {
	mod   *module
	rt    *sobek.Runtime
	obj   *sobek.Object
	url   string
	conn  *websocket.Conn
	state int
	tags  metrics.TagSet
	md    metrics.TagSet
	start time.Time

	events    chan event
	listeners map[string][]sobek.Callable
	writeMu   sync.Mutex
	pingSent  sync.Map // payload -> time
}

func (m *module) newSocket(call sobek.ConstructorCall) *sobek.Object {
	rt := m.vu.Runtime()
	st := m.vu.State()
	if st == nil {
		panic(rt.NewTypeError("WebSocket can't be created in the init context"))
	}
	raw := call.Argument(0).String()
	s := &socket{mod: m, rt: rt, url: raw, listeners: map[string][]sobek.Callable{}, start: time.Now()}
	hdr := http.Header{}
	var protocols []string
	if p := call.Argument(1); !sobek.IsUndefined(p) && !sobek.IsNull(p) {
		if po, ok := p.(*sobek.Object); ok && po.ClassName() == "Array" {
			for _, k := range po.Keys() {
				protocols = append(protocols, po.Get(k).String())
			}
		} else {
			protocols = []string{p.String()}
		}
	}
	extra := map[string]string{}
	if p, ok := call.Argument(2).(*sobek.Object); ok {
		if h, ok := p.Get("headers").(*sobek.Object); ok {
			for _, k := range h.Keys() {
				hdr.Set(k, h.Get(k).String())
			}
		}
		if tg, ok := p.Get("tags").(*sobek.Object); ok {
			for _, k := range tg.Keys() {
				extra[k] = tg.Get(k).String()
			}
		}
	}
	base := metrics.TagSet{}
	if st.Tags != nil {
		base = st.Tags.TagSet()
	}
	extra["url"] = raw
	s.tags = base.Merge(metrics.TagsFromMap(extra))
	if st.Metadata != nil && st.Metadata.Len() > 0 {
		s.md = st.Metadata.TagSet()
	}
	s.obj = rt.NewObject()
	s.define()
	m.connect(s, hdr, protocols)
	return s.obj
}

// define adds the browser-style properties and methods.
func (s *socket) define() {
	o, rt := s.obj, s.rt
	getter := func(name string, f func() sobek.Value) {
		_ = o.DefineAccessorProperty(name, rt.ToValue(func(sobek.FunctionCall) sobek.Value { return f() }), nil, sobek.FLAG_FALSE, sobek.FLAG_TRUE)
	}
	getter("readyState", func() sobek.Value { return rt.ToValue(s.state) })
	getter("url", func() sobek.Value { return rt.ToValue(s.url) })
	getter("bufferedAmount", func() sobek.Value { return rt.ToValue(0) })
	_ = o.Set("binaryType", "blob")
	for _, ev := range []string{"open", "message", "error", "close", "ping", "pong"} {
		_ = o.Set("on"+ev, sobek.Null())
	}
	_ = o.Set("send", func(data sobek.Value) { s.send(data) })
	_ = o.Set("ping", func() { s.ping() })
	_ = o.Set("close", func(call sobek.FunctionCall) { s.close(call.Argument(0), call.Argument(1)) })
	_ = o.Set("addEventListener", func(name string, fn sobek.Value) {
		if f, ok := sobek.AssertFunction(fn); ok {
			s.listeners[name] = append(s.listeners[name], f)
		}
	})
}

// event is what a reader goroutine hands to the VU goroutine.
type event struct {
	kind   string // open, message, binary, error, close, ping, pong
	data   []byte
	code   int
	reason string
	err    error
}

func (m *module) connect(s *socket, hdr http.Header, protocols []string) {
	vu := m.vu
	ctx := vu.Context()
	opts := m.options()
	insecure := opts.InsecureSkipTLSVerify != nil && *opts.InsecureSkipTLSVerify
	if opts.UserAgent != nil && hdr.Get("User-Agent") == "" && *opts.UserAgent != "" {
		hdr.Set("User-Agent", *opts.UserAgent)
	}
	d := &websocket.Dialer{
		HandshakeTimeout: 60 * time.Second,
		Subprotocols:     protocols,
		TLSClientConfig:  &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // the insecureSkipTLSVerify option asks for it
		NetDialContext:   m.dialer.DialContext,
	}
	if err := m.optsErr; err != nil {
		d.NetDialContext = func(context.Context, string, string) (net.Conn, error) { return nil, err }
	}
	enq := vu.RegisterCallback()
	go func() {
		start := time.Now()
		conn, resp, err := d.DialContext(ctx, s.url, hdr)
		connecting := time.Since(start)
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		if err != nil {
			// As k6: the session and its connecting time are recorded, then
			// error (the dial's own text, e.g. the dialer's "IP (…) is in a
			// blacklisted range (…)") and close, with no code.
			enq(func() error {
				s.state = stateClosed
				vu.Metrics().Push(
					metrics.Sample{Metric: m.m.sessions, Time: time.Now(), Value: 1, Tags: s.tags, Metadata: s.md},
					metrics.Sample{Metric: m.m.connecting, Time: time.Now(), Value: ms(connecting), Tags: s.tags, Metadata: s.md},
				)
				s.dispatch(event{kind: "error", err: err})
				s.dispatch(event{kind: "close"})
				return nil
			})
			return
		}
		s.conn = conn
		s.tags = s.tags.With("status", strconv.Itoa(status))
		if p := conn.Subprotocol(); p != "" {
			s.tags = s.tags.With("subproto", p)
		}
		conn.SetPingHandler(func(data string) error {
			s.writeMu.Lock()
			err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
			s.writeMu.Unlock()
			s.post(event{kind: "ping"})
			return err
		})
		conn.SetPongHandler(func(data string) error {
			if t, ok := s.pingSent.LoadAndDelete(data); ok {
				m.vu.Metrics().Push(metrics.Sample{Metric: m.m.ping, Time: time.Now(), Value: ms(time.Since(t.(time.Time))), Tags: s.tags, Metadata: s.md})
			}
			s.post(event{kind: "pong"})
			return nil
		})
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		next := vu.RegisterCallback()
		s.events = make(chan event, 64)
		enq(func() error {
			s.state = stateOpen
			vu.Metrics().Push(
				metrics.Sample{Metric: m.m.sessions, Time: time.Now(), Value: 1, Tags: s.tags, Metadata: s.md},
				metrics.Sample{Metric: m.m.connecting, Time: time.Now(), Value: ms(connecting), Tags: s.tags, Metadata: s.md},
			)
			s.dispatch(event{kind: "open"})
			return nil
		})
		go func() {
			for {
				mt, data, err := conn.ReadMessage()
				if err != nil {
					code, reason := websocket.CloseAbnormalClosure, ""
					var ce *websocket.CloseError
					if errors.As(err, &ce) {
						code, reason = ce.Code, ce.Text
					}
					s.post(event{kind: "close", code: code, reason: reason})
					close(s.events)
					return
				}
				kind := "message"
				if mt == websocket.BinaryMessage {
					kind = "binary"
				}
				s.post(event{kind: kind, data: data})
			}
		}()
		// The pump keeps exactly one reservation outstanding while the
		// socket is open, so the iteration waits for it (k6's TaskQueue).
		for ev := range s.events {
			if ev.kind == "close" {
				stop()
				next(func() error {
					s.finish(ev)
					return nil
				})
				return
			}
			after := vu.RegisterCallback()
			next(func() error {
				if ev.kind == "message" || ev.kind == "binary" {
					vu.Metrics().Push(metrics.Sample{Metric: m.m.received, Time: time.Now(), Value: 1, Tags: s.tags, Metadata: s.md})
				}
				s.dispatch(ev)
				return nil
			})
			next = after
		}
	}()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// post hands an event from a reader goroutine to the pump.
func (s *socket) post(ev event) {
	defer func() { _ = recover() }() // the pump may be gone after close
	s.events <- ev
}

func (s *socket) finish(ev event) {
	if s.state == stateClosed {
		return
	}
	s.state = stateClosed
	_ = s.conn.Close()
	s.mod.vu.Metrics().Push(metrics.Sample{Metric: s.mod.m.session, Time: time.Now(), Value: ms(time.Since(s.start)), Tags: s.tags, Metadata: s.md})
	s.dispatch(ev)
}

// dispatch calls on<kind> and the listeners with a browser-style event.
func (s *socket) dispatch(ev event) {
	rt := s.rt
	e := rt.NewObject()
	name := ev.kind
	switch ev.kind {
	case "message":
		_ = e.Set("data", string(ev.data))
	case "binary":
		name = "message"
		_ = e.Set("data", rt.NewArrayBuffer(ev.data))
	case "error":
		_ = e.Set("error", ev.err.Error())
		_ = e.Set("message", ev.err.Error())
	case "close":
		if ev.code != 0 {
			_ = e.Set("code", ev.code)
		}
		_ = e.Set("reason", ev.reason)
	}
	_ = e.Set("type", name)
	_ = e.Set("target", s.obj)
	var fns []sobek.Callable
	if f, ok := sobek.AssertFunction(s.obj.Get("on" + name)); ok {
		fns = append(fns, f)
	}
	fns = append(fns, s.listeners[name]...)
	for _, f := range fns {
		if _, err := f(s.obj, e); err != nil {
			panic(err)
		}
	}
}

func (s *socket) send(data sobek.Value) {
	if s.state != stateOpen {
		panic(s.rt.NewTypeError("WebSocket.send: the socket is not open"))
	}
	mt, b := websocket.TextMessage, []byte(data.String())
	switch x := data.Export().(type) {
	case sobek.ArrayBuffer:
		mt, b = websocket.BinaryMessage, x.Bytes()
	case []byte:
		mt, b = websocket.BinaryMessage, x
	}
	s.writeMu.Lock()
	err := s.conn.WriteMessage(mt, b)
	s.writeMu.Unlock()
	if err != nil {
		s.dispatch(event{kind: "error", err: err})
		return
	}
	s.mod.vu.Metrics().Push(metrics.Sample{Metric: s.mod.m.sent, Time: time.Now(), Value: 1, Tags: s.tags, Metadata: s.md})
}

func (s *socket) ping() {
	if s.state != stateOpen {
		return
	}
	payload := strconv.FormatInt(time.Now().UnixNano(), 36)
	s.pingSent.Store(payload, time.Now())
	s.writeMu.Lock()
	_ = s.conn.WriteControl(websocket.PingMessage, []byte(payload), time.Now().Add(time.Second))
	s.writeMu.Unlock()
}

// close sends a close frame; onclose runs when the peer answers (or the
// connection ends).
func (s *socket) close(codeV, reasonV sobek.Value) {
	if s.state != stateOpen {
		return
	}
	code := websocket.CloseNormalClosure
	if !sobek.IsUndefined(codeV) && !sobek.IsNull(codeV) {
		code = int(codeV.ToInteger())
	}
	reason := ""
	if !sobek.IsUndefined(reasonV) && !sobek.IsNull(reasonV) {
		reason = reasonV.String()
	}
	s.state = stateClosing
	s.writeMu.Lock()
	err := s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	s.writeMu.Unlock()
	if err != nil {
		_ = s.conn.Close()
	}
	go func(c *websocket.Conn) {
		// A peer that never answers the close frame: end it after a while.
		time.Sleep(5 * time.Second)
		_ = c.Close()
	}(s.conn)
}
