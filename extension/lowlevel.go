package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/preflight"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// lowLevelMembers are the low-level API of a scenario object: identities, a
// socket session (publish, subscribeUntilEose, close) and HTTP calls
// (query, events, count), each recorded as the op name the script gives.
var lowLevelMembers = []scenarioMember{
	method("client", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value {
		g, err := in.globalArg(l, c.Argument(0), c.Argument(1))
		if err != nil {
			in.throw(err)
		}
		info, _ := l.base.Client(g)
		var chans []string
		for _, ch := range l.base.MemberChannels(g) {
			chans = append(chans, l.base.ChannelID(ch))
		}
		v := in.toJS(map[string]any{"global": g, "kind": info.Kind.String(), "index": info.Index,
			"community": info.Community, "pubkey": l.base.Keys(g).PubKey(), "channels": chans})
		if o, ok := v.(*sobek.Object); ok {
			in.addHTTPInfo(l, g, o)
		}
		return v
	}),
	method("channelId", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value {
		ch := scenario.Channel{Community: int(c.Argument(0).ToInteger()), Index: int(c.Argument(1).ToInteger())}
		if !l.base.ValidChannel(ch) {
			in.throw(fmt.Errorf("channelId(%d, %d): no such channel in %s", ch.Community, ch.Index, l.base.File))
		}
		return in.rt().ToValue(l.base.ChannelID(ch))
	}),
	method("hotRoot", func(in *instance, l *loaded, _ sobek.FunctionCall) sobek.Value {
		id, err := in.hotRoot(l)
		if err != nil {
			in.throw(err)
		}
		return in.rt().ToValue(id)
	}),
	method("connect", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value { return in.jsConnect(l, c) }),
	method("http", func(in *instance, l *loaded, c sobek.FunctionCall) sobek.Value { return in.jsHTTP(l, c) }),
}

// globalArg reads (global) or (kind, index) into a global index.
func (in *instance) globalArg(l *loaded, a, b sobek.Value) (int, error) {
	if sobek.IsUndefined(b) {
		g := int(a.ToInteger())
		if _, ok := l.base.Client(g); !ok || l.base.Keys(g) == nil {
			return 0, fmt.Errorf("global index %d is not a client of %s", g, l.base.File)
		}
		return g, nil
	}
	kinds := map[string]scenario.Kind{"human": scenario.KindHuman, "desktop": scenario.KindDesktop,
		"agent": scenario.KindAgent, "hot_author": scenario.KindHotAuthor, "hotAuthor": scenario.KindHotAuthor}
	k, ok := kinds[a.String()]
	if !ok {
		return 0, fmt.Errorf("client kind %q: want human, agent or hot_author", a.String())
	}
	i := int(b.ToInteger())
	g := l.base.GlobalIndex(k, i)
	if c, ok := l.base.Client(g); !ok || c.Kind.IsHuman() != k.IsHuman() || l.base.Keys(g) == nil {
		return 0, fmt.Errorf("%s %d is not a client of %s", a.String(), i, l.base.File)
	}
	return g, nil
}

// lowSink is this VU's sink for low-level operations: in VU code the
// scenario's steps tag them; in setup and teardown they are recorded like
// the seed's operations (step "setup" / "teardown", outside the steps).
func (in *instance) lowSink(l *loaded) (relayclient.Sink, error) {
	st := in.vu.State()
	if st == nil || st.Phase == jsmodule.PhaseInit {
		return nil, errors.New("the low-level API is for VU code, setup and teardown, not init code")
	}
	if st.Phase != jsmodule.PhaseIteration {
		label := "setup"
		if st.Phase != jsmodule.PhaseSetup {
			label = st.Phase.String()
		}
		return &setupSink{l: l, met: in.met, push: in.vu.Metrics().Push, base: st.Tags.TagSet(), step: label}, nil
	}
	key := slotKey{l, "\x00low:" + st.Scenario}
	if sl := in.slots[key]; sl != nil {
		sl.sink.retag(st.Tags.TagSet())
		return sl.sink, nil
	}
	start, err := in.scenarioStart(l, st)
	if err != nil {
		return nil, err
	}
	s := newOpSink(l, report.CustomKind, in.met, in.vu, st.Tags.TagSet(), start)
	in.slots[key] = &slot{sink: s}
	in.notePerformer(l)
	l.startWindows(start)
	return s, nil
}

func (in *instance) identity(l *loaded, g int) (relayclient.Target, *nostr.Keys, []string, error) {
	sc, err := l.target()
	if err != nil {
		return relayclient.Target{}, nil, nil, err
	}
	info, _ := sc.Client(g)
	t := preflight.CommunityTarget(sc, info.Community)
	keys := sc.Keys(g)
	var oa []string
	if info.Kind == scenario.KindAgent {
		if oa, err = nostr.AttestAgent(sc.AgentOwnerKeys(g), keys.PubKey(), ""); err != nil {
			return t, nil, nil, err
		}
	}
	return t, keys, oa, nil
}

type callOpts struct {
	Op      string  `json:"op"`
	Timeout float64 `json:"timeout_ms"`
}

func (in *instance) opts(v sobek.Value, def string) callOpts {
	o := callOpts{Op: def}
	if x, err := in.fromJS(v); err == nil && x != nil {
		raw, _ := json.Marshal(x)
		if err := json.Unmarshal(raw, &o); err != nil {
			in.throw(fmt.Errorf("options %s: %w", raw, err))
		}
		if o.Op == "" {
			o.Op = def
		}
	}
	return o
}

func (o callOpts) timeout() time.Duration {
	return time.Duration(o.Timeout * float64(time.Millisecond))
}

func resultJS(r relayclient.Result) map[string]any {
	m := map[string]any{"ok": r.Outcome == relayclient.OutcomeOK, "outcome": r.Outcome.String(), "op": r.Op,
		"duration_ms": ms(r.Duration)}
	if r.Error != "" {
		m["error"] = r.Error
	}
	return m
}

// lowClient resolves the (global | kind, index) arguments of a low-level
// call to the client's target, keys, NIP-OA tag and the sink its ops go to.
func (in *instance) lowClient(l *loaded, c sobek.FunctionCall) (relayclient.Target, *nostr.Keys, []string, relayclient.Sink) {
	g, err := in.globalArg(l, c.Argument(0), c.Argument(1))
	if err != nil {
		in.throw(err)
	}
	sink, err := in.lowSink(l)
	if err != nil {
		in.throw(err)
	}
	t, keys, oa, err := in.identity(l, g)
	if err != nil {
		in.throw(err)
	}
	if !l.preOK.Load() {
		// Custom traffic is traffic too: a --no-setup run of a low-level
		// script checks the target before its first call.
		sc, err := l.target()
		if err == nil {
			err = l.checkTarget(in.vu.Context(), sc, false, nil, "")
		}
		if err != nil {
			in.throw(err)
		}
	}
	return t, keys, oa, sink
}

// jsConnect is sc.connect(global | kind, index): an authenticated socket
// session of that client, closed at the latest when the iteration ends.
func (in *instance) jsConnect(l *loaded, c sobek.FunctionCall) sobek.Value {
	t, keys, oa, sink := in.lowClient(l, c)
	ct := relayclient.DefaultConnectTimeout
	if s := l.base.Target.ConnectTimeoutSecs; s > 0 {
		ct = scenario.Secs(s)
	}
	ctx := in.vu.Context()
	conn, err := relayclient.Connect(ctx, relayclient.Config{Target: t, Keys: keys, OATag: oa, Sink: sink, ConnectTimeout: ct})
	rt := in.rt()
	o := rt.NewObject()
	if err != nil {
		_ = o.Set("ok", false)
		_ = o.Set("error", err.Error())
		_ = o.Set("close", func() {})
		return o
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	_ = o.Set("ok", true)
	_ = o.Set("pubkey", keys.PubKey())
	_ = o.Set("publish", func(call sobek.FunctionCall) sobek.Value {
		ev, err := in.buildEvent(keys, call.Argument(0))
		if err != nil {
			in.throw(err)
		}
		op := in.opts(call.Argument(1), relayclient.OpPublish)
		r := conn.Publish(ctx, ev, relayclient.PublishOptions{Op: op.Op, Timeout: op.timeout(), Due: in.iterDue()})
		m := resultJS(r)
		m["id"] = ev.ID
		return in.toJS(m)
	})
	_ = o.Set("subscribeUntilEose", func(call sobek.FunctionCall) sobek.Value {
		fs, err := in.filters(call.Argument(0))
		if err != nil {
			in.throw(err)
		}
		op := in.opts(call.Argument(1), relayclient.OpSubscribeEOSE)
		n := 0
		sub, r, err := conn.SubscribeEOSE(ctx, fs, relayclient.SubOptions{Op: op.Op, EOSETimeout: op.timeout()})
		if sub != nil {
			n = sub.Replayed()
			_ = sub.Close()
		}
		m := resultJS(r)
		m["events"] = n
		if err != nil && m["error"] == nil {
			m["error"] = err.Error()
		}
		return in.toJS(m)
	})
	_ = o.Set("close", func() {
		stop()
		_ = conn.Close()
	})
	return o
}

// jsHTTP is sc.http(global | kind, index): NIP-98 signed HTTP calls as
// that client.
func (in *instance) jsHTTP(l *loaded, c sobek.FunctionCall) sobek.Value {
	t, keys, oa, sink := in.lowClient(l, c)
	pool, err := in.m.httpPool()
	if err != nil {
		in.throw(err)
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: t, Keys: keys, OATag: oa, Sink: sink, Transport: pool})
	if err != nil {
		in.throw(err)
	}
	rt := in.rt()
	o := rt.NewObject()
	_ = o.Set("query", func(call sobek.FunctionCall) sobek.Value {
		fs, err := in.filters(call.Argument(0))
		if err != nil {
			in.throw(err)
		}
		op := in.opts(call.Argument(1), relayclient.OpHTTPQuery)
		evs, r := h.Query(in.vu.Context(), fs, relayclient.CallOptions{Op: op.Op, Timeout: op.timeout(), Due: in.iterDue()})
		m := resultJS(r)
		m["events"] = evs
		return in.toJS(m)
	})
	_ = o.Set("events", func(call sobek.FunctionCall) sobek.Value {
		ev, err := in.buildEvent(keys, call.Argument(0))
		if err != nil {
			in.throw(err)
		}
		op := in.opts(call.Argument(1), relayclient.OpHTTPEvents)
		rep, r := h.PublishHTTP(in.vu.Context(), ev, relayclient.CallOptions{Op: op.Op, Timeout: op.timeout(), Due: in.iterDue()})
		m := resultJS(r)
		m["id"], m["accepted"], m["message"] = ev.ID, rep.Accepted, rep.Message
		return in.toJS(m)
	})
	_ = o.Set("count", func(call sobek.FunctionCall) sobek.Value {
		fs, err := in.filters(call.Argument(0))
		if err != nil {
			in.throw(err)
		}
		op := in.opts(call.Argument(1), relayclient.OpHTTPCount)
		n, r := h.CountHTTP(in.vu.Context(), fs, relayclient.CallOptions{Op: op.Op, Timeout: op.timeout(), Due: in.iterDue()})
		m := resultJS(r)
		m["count"] = n
		return in.toJS(m)
	})
	return o
}

// eventIn is an event as scripts write it.
type eventIn struct {
	Kind    *int       `json:"kind"`
	Content string     `json:"content"`
	Tags    [][]string `json:"tags"`
	// Timed adds ["buzzload_sent", "<unix µs>"], so live subscribers record
	// deliver for it.
	Timed bool `json:"timed"`
}

func (in *instance) buildEvent(keys *nostr.Keys, v sobek.Value) (*nostr.Event, error) {
	x, err := in.fromJS(v)
	if err != nil || x == nil {
		return nil, fmt.Errorf("event: want an object {kind, content, tags, timed}")
	}
	raw, _ := json.Marshal(x)
	var e eventIn
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("event: %w", err)
	}
	if e.Kind == nil || *e.Kind < 0 || *e.Kind > 65535 {
		return nil, errors.New("event: kind is required (0..65535)")
	}
	tags := e.Tags
	now := time.Now()
	if e.Timed {
		tags = append(append([][]string(nil), tags...), scenario.SentAtTag(now))
	}
	if tags == nil {
		tags = [][]string{}
	}
	return keys.NewEvent(*e.Kind, tags, e.Content, now)
}

// filters converts NIP-01 filters from JS: ids, authors, kinds, "#x" tag
// filters, since, until, limit; any other key is a Buzz extension field.
func (in *instance) filters(v sobek.Value) ([]relayclient.Filter, error) {
	x, err := in.fromJS(v)
	if err != nil {
		return nil, err
	}
	var list []any
	switch t := x.(type) {
	case []any:
		list = t
	case map[string]any:
		list = []any{t}
	default:
		return nil, errors.New("filters: want a filter object or an array of them")
	}
	var out []relayclient.Filter
	for i, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("filters[%d]: want an object", i)
		}
		var f relayclient.Filter
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val := m[k]
			bad := func() error { return fmt.Errorf("filters[%d].%s: wrong type", i, k) }
			switch {
			case k == "ids" || k == "authors" || strings.HasPrefix(k, "#"):
				ss, ok := strs(val)
				if !ok {
					return nil, bad()
				}
				switch k {
				case "ids":
					f.IDs = ss
				case "authors":
					f.Authors = ss
				default:
					if f.Tags == nil {
						f.Tags = map[string][]string{}
					}
					f.Tags[k[1:]] = ss
				}
			case k == "kinds":
				arr, ok := val.([]any)
				if !ok {
					return nil, bad()
				}
				for _, a := range arr {
					n, ok := a.(float64)
					if !ok {
						return nil, bad()
					}
					f.Kinds = append(f.Kinds, int(n))
				}
			case k == "since" || k == "until" || k == "limit":
				n, ok := val.(float64)
				if !ok {
					return nil, bad()
				}
				switch k {
				case "since":
					f.Since = int64(n)
				case "until":
					f.Until = int64(n)
				default:
					f.Limit = int(n)
					f.LimitZero = n == 0
				}
			default:
				if f.Extra == nil {
					f.Extra = map[string]any{}
				}
				f.Extra[k] = val
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func strs(v any) ([]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(arr))
	for _, a := range arr {
		s, ok := a.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// hotRoot finds the seeded hot-thread root (a NIP-50 search for the run's
// hot marker in its channel, as the hot-thread author does) once per run.
func (in *instance) hotRoot(l *loaded) (string, error) {
	l.hotMu.Lock()
	defer l.hotMu.Unlock()
	if l.hotRoot != "" {
		return l.hotRoot, nil
	}
	if !l.base.HotThreadEnabled() {
		return "", fmt.Errorf("%s has no hot thread", l.base.File)
	}
	sc, err := l.target()
	if err != nil {
		return "", err
	}
	ch := sc.HotThreadChannel()
	author := sc.GlobalIndex(scenario.KindHotAuthor, 0)
	t, keys, _, err := in.identity(l, author)
	if err != nil {
		return "", err
	}
	pool, _ := in.m.httpPool()
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: t, Keys: keys, Transport: pool})
	if err != nil {
		return "", err
	}
	ctx := in.vu.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	evs, r := h.Query(ctx, []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {sc.ChannelID(ch)}},
		Limit: 10, Extra: map[string]any{"search": scenario.HotRootMarker(sc.RunID)}}}, relayclient.CallOptions{})
	if r.Outcome != relayclient.OutcomeOK {
		return "", fmt.Errorf("finding the hot root: %s", r.Error)
	}
	for _, e := range evs {
		if strings.Contains(e.Content, scenario.HotRootMarker(sc.RunID)) {
			l.hotRoot = e.ID
			return e.ID, nil
		}
	}
	return "", errors.New("the hot-thread root is not on the relay (was setup() run?)")
}

// iterDue is the Result.Due of a low-level call: the planned start of an
// arrival-rate iteration for its first call (paced calls, issue 14), zero
// for the rest of the iteration and under the other executors.
func (in *instance) iterDue() time.Time {
	st := in.vu.State()
	if st == nil || st.IterationDue.IsZero() || st.IterationDue.Equal(in.dueUsed) {
		return time.Time{}
	}
	in.dueUsed = st.IterationDue
	return st.IterationDue
}
