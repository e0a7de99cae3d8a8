package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestMetricNameValidation(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"one character is too short", false},
		{"c", false},
		{"ab", true},
		{"_x", true},
		{"http_req_duration", true},
		{"a1", true},
		{"1a", false},
		{"has-dash", false},
		{"has space", false},
		{"dotted.name", false},
		{"", false},
		{"a" + strings.Repeat("b", 128), true},  // 129 characters
		{"a" + strings.Repeat("b", 129), false}, // 130 characters
		{"ünicode", false},
	}
	for _, c := range cases[1:] {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateName(c.name)
			if (err == nil) != c.ok {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", c.name, err, c.ok)
			}
		})
	}
}

func TestRegistryCreateOrGet(t *testing.T) {
	r := NewRegistry()
	a, err := r.New("my_trend", Trend, Time)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("same name and type returns the same metric", func(t *testing.T) {
		b, err := r.New("my_trend", Trend, Time)
		if err != nil || b != a {
			t.Fatalf("got %p, %v; want %p", b, err, a)
		}
	})
	t.Run("another type is an error naming the metric", func(t *testing.T) {
		_, err := r.New("my_trend", Counter, Time)
		if err == nil || !strings.Contains(err.Error(), "my_trend") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("another value type is an error", func(t *testing.T) {
		if _, err := r.New("my_trend", Trend, Default); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("an invalid name is an error", func(t *testing.T) {
		if _, err := r.New("c", Counter, Default); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("builtins register once and agree with spec types", func(t *testing.T) {
		b, err := r.RegisterBuiltins()
		if err != nil {
			t.Fatal(err)
		}
		if b.IterationDuration.Type != Trend || b.IterationDuration.Contains != Time || b.Checks.Type != Rate ||
			b.DataSent.Contains != Data || b.VUs.Type != Gauge || b.Iterations.Type != Counter {
			t.Fatalf("unexpected builtin types: %+v", b)
		}
		if _, err := r.RegisterBuiltins(); err != nil {
			t.Fatalf("second registration: %v", err)
		}
		if r.Get("http_req_duration") == nil {
			t.Fatal("http_req_duration not registered")
		}
	})
}

func TestSubmetricSelectorParsing(t *testing.T) {
	cases := []struct {
		rule, key  string
		metric     string
		tags       map[string]string
		suffix     string
		wantErrSub string
	}{
		{rule: "plain name has no selector", key: "http_reqs", metric: "http_reqs"},
		{rule: "one pair", key: "http_req_duration{status:200}", metric: "http_req_duration", tags: map[string]string{"status": "200"}, suffix: "status:200"},
		{rule: "spaces around keys and values are trimmed", key: "m_x{ a : b , c:d }", metric: "m_x", tags: map[string]string{"a": "b", "c": "d"}, suffix: " a : b , c:d "},
		{rule: "double and single quotes are trimmed", key: `m_x{"a":'b c'}`, metric: "m_x", tags: map[string]string{"a": "b c"}, suffix: `"a":'b c'`},
		{rule: "value split at first colon keeps the rest", key: "group_duration{group:::mygroup}", metric: "group_duration", tags: map[string]string{"group": "::mygroup"}, suffix: "group:::mygroup"},
		{rule: "cut at first brace, braces inside value allowed", key: "http_req_duration{name:http://${}.com}", metric: "http_req_duration", tags: map[string]string{"name": "http://${}.com"}, suffix: "name:http://${}.com"},
		{rule: "empty parts are skipped", key: "m_x{a:b,,c:d,}", metric: "m_x", tags: map[string]string{"a": "b", "c": "d"}, suffix: "a:b,,c:d,"},
		{rule: "part without colon selects an empty value", key: "m_x{flag}", metric: "m_x", tags: map[string]string{"flag": ""}, suffix: "flag"},
		{rule: "missing closing brace is an error", key: "m_x{a:b", wantErrSub: "end with '}'"},
		{rule: "text after closing brace is an error", key: "m_x{a:b}c", wantErrSub: "end with '}'"},
		{rule: "empty selector is an error", key: "m_x{ }", wantErrSub: "empty"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			sel, err := ParseSelector(c.key)
			if c.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErrSub) || !strings.Contains(err.Error(), c.key) {
					t.Fatalf("err = %v, want one containing %q and the key", err, c.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.Metric != c.metric || sel.Name != c.key || sel.Suffix != c.suffix {
				t.Fatalf("got %+v", sel)
			}
			got := sel.Tags.Map()
			if len(got) != len(c.tags) {
				t.Fatalf("tags = %v, want %v", got, c.tags)
			}
			for k, v := range c.tags {
				if got[k] != v {
					t.Fatalf("tags = %v, want %v", got, c.tags)
				}
			}
		})
	}
}

func TestSubmetricSelectorMatching(t *testing.T) {
	sel, _ := ParseSelector("m_x{status:200,method:GET}")
	cases := []struct {
		rule string
		tags TagSet
		want bool
	}{
		{"all pairs present matches", TagsFromMap(map[string]string{"status": "200", "method": "GET", "url": "u"}), true},
		{"one value differs does not match", TagsFromMap(map[string]string{"status": "500", "method": "GET"}), false},
		{"a missing key does not match", TagsFromMap(map[string]string{"status": "200"}), false},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			if got := sel.Matches(c.tags); got != c.want {
				t.Fatalf("Matches = %v", got)
			}
		})
	}
	empty, _ := ParseSelector("m_x{flag}")
	if empty.Matches(TagSet{}) {
		t.Fatal("an empty-value selector matched a sample without the key")
	}
	if !empty.Matches(NewTagSet(Tag{"flag", ""})) {
		t.Fatal("an empty-value selector did not match the key with an empty value")
	}
}

func TestTagSetIsImmutableAndComparable(t *testing.T) {
	a := NewTagSet(Tag{"b", "2"}, Tag{"a", "1"})
	b := TagsFromMap(map[string]string{"a": "1", "b": "2"})
	if !a.Equal(b) || a.Hash() != b.Hash() {
		t.Fatal("equal sets differ")
	}
	c := a.With("c", "3")
	if a.Len() != 2 || c.Len() != 3 {
		t.Fatal("With changed the receiver")
	}
	if a.Equal(c) || a.Hash() == c.Hash() {
		t.Fatal("different sets compare equal")
	}
	if d := c.Without("c"); !d.Equal(a) {
		t.Fatal("Without did not undo With")
	}
	if m := a.Merge(NewTagSet(Tag{"a", "x"}, Tag{"z", "9"})); m.String() != "a=x,b=2,z=9" {
		t.Fatalf("Merge = %s", m)
	}
	if dup := NewTagSet(Tag{"k", "1"}, Tag{"k", "2"}); dup.String() != "k=2" {
		t.Fatalf("later duplicate should win, got %s", dup)
	}
	j, _ := json.Marshal(c)
	if string(j) != `{"a":"1","b":"2","c":"3"}` {
		t.Fatalf("json = %s", j)
	}
	var back TagSet
	if err := json.Unmarshal(j, &back); err != nil || !back.Equal(c) {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if e, _ := json.Marshal(TagSet{}); string(e) != "{}" {
		t.Fatalf("empty json = %s", e)
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func stat(t *testing.T, s string) Stat {
	t.Helper()
	st, err := ParseStat(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSinkValues(t *testing.T) {
	type want struct {
		stat string
		v    float64
		ok   bool
	}
	cases := []struct {
		rule   string
		typ    Type
		values []float64
		dur    time.Duration
		wants  []want
	}{
		{"counter count is the sum and rate divides by run seconds", Counter, []float64{1, 2, 3, -1}, 2 * time.Second,
			[]want{{"count", 5, true}, {"rate", 2.5, true}}},
		{"counter rate is missing when run duration is 0", Counter, []float64{1}, 0, []want{{"rate", 0, false}, {"count", 1, true}}},
		{"empty counter count is 0", Counter, nil, time.Second, []want{{"count", 0, true}, {"rate", 0, true}}},
		{"gauge value is the last", Gauge, []float64{5, 1, 9, 3}, 0, []want{{"value", 3, true}, {"min", 1, true}, {"max", 9, true}}},
		{"rate is non-zero share", Rate, []float64{1, 0, 2, 0, 0}, 0, []want{{"rate", 0.4, true}}},
		{"empty rate has no rate", Rate, nil, 0, []want{{"rate", 0, false}}},
		{"trend stats", Trend, []float64{1, 2, 3, 4}, 0,
			[]want{{"count", 4, true}, {"min", 1, true}, {"max", 4, true}, {"avg", 2.5, true}, {"med", 2.5, true}, {"p(0)", 1, true}, {"p(100)", 4, true}}},
		{"empty trend is 0 everywhere", Trend, nil, 0, []want{{"avg", 0, true}, {"p(95)", 0, true}, {"min", 0, true}, {"max", 0, true}}},
		{"single trend value is returned as is", Trend, []float64{120.123456}, 0, []want{{"p(95)", 120.123456, true}, {"med", 120.123456, true}}},
		{"trend of equal values prints them exactly", Trend, []float64{120, 120, 120}, 0, []want{{"p(90)", 120, true}, {"avg", 120, true}}},
		{"trend handles negative values", Trend, []float64{-5, -1, 0, 2}, 0, []want{{"min", -5, true}, {"max", 2, true}, {"avg", -1, true}}},
		{"trend aggregations a type lacks are missing", Trend, []float64{1}, 0, []want{{"rate", 0, false}, {"value", 0, false}}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := NewSink(c.typ)
			for i, v := range c.values {
				s.Add(v, t0.Add(time.Duration(i)*time.Second))
			}
			if s.IsEmpty() != (len(c.values) == 0) {
				t.Fatalf("IsEmpty = %v", s.IsEmpty())
			}
			for _, w := range c.wants {
				v, ok := s.Value(stat(t, w.stat), c.dur)
				if ok != w.ok || (ok && math.Abs(v-w.v) > 1e-9*math.Max(1, math.Abs(w.v))) {
					t.Errorf("%s = %v, %v; want %v, %v", w.stat, v, ok, w.v, w.ok)
				}
			}
		})
	}
}

func TestGaugeLastValueFollowsSampleTime(t *testing.T) {
	g := &GaugeSink{}
	g.Add(7, t0.Add(2*time.Second))
	g.Add(3, t0.Add(time.Second)) // older, arrives later
	if g.Last() != 7 || g.Min() != 3 {
		t.Fatalf("last=%v min=%v", g.Last(), g.Min())
	}
}

func TestNonFiniteValuesAreIgnored(t *testing.T) {
	for _, typ := range []Type{Counter, Gauge, Rate, Trend} {
		s := NewSink(typ)
		s.Add(math.NaN(), t0)
		s.Add(math.Inf(1), t0)
		if !s.IsEmpty() {
			t.Errorf("%s sink took a non-finite value", typ)
		}
	}
}

// exactPercentile is k6's definition on the raw values.
func exactPercentile(sorted []float64, p float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	i := p / 100 * float64(len(sorted)-1)
	a, b := sorted[int(math.Floor(i))], sorted[int(math.Ceil(i))]
	return a + (b-a)*(i-math.Floor(i))
}

func TestTrendPercentilesWithinHistogramPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := []struct {
		rule string
		gen  func() float64
	}{
		{"lognormal latencies around 50ms", func() float64 { return math.Exp(rng.NormFloat64()*1.2 + math.Log(50)) }},
		{"uniform sub-millisecond", func() float64 { return rng.Float64() }},
		{"wide range ns to an hour", func() float64 { return math.Pow(10, rng.Float64()*12-6) * 3.6 }},
		{"integers 1..100", func() float64 { return float64(rng.IntN(100) + 1) }},
		{"mixed signs", func() float64 { return rng.NormFloat64() * 1000 }},
	}
	percentiles := []float64{0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100}
	for _, d := range dists {
		t.Run(d.rule, func(t *testing.T) {
			ts := NewTrendSink()
			vals := make([]float64, 20000)
			for i := range vals {
				vals[i] = d.gen()
				ts.Add(vals[i], t0)
			}
			sort.Float64s(vals)
			for _, p := range percentiles {
				want := exactPercentile(vals, p)
				got := ts.Percentile(p)
				// Each value is read as its bucket's middle: error below
				// 1/256 relative, plus 1e-6 absolute (unit rounding). Linear
				// interpolation between two such values keeps the bound
				// relative to the larger magnitude of the two.
				lo, hi := vals[int(math.Floor(p/100*float64(len(vals)-1)))], vals[int(math.Ceil(p/100*float64(len(vals)-1)))]
				tol := math.Max(math.Abs(lo), math.Abs(hi))/(1<<trendSubBucketBits) + 1e-6
				if math.Abs(got-want) > tol {
					t.Errorf("p(%v) = %v, exact %v, diff %v > %v", p, got, want, math.Abs(got-want), tol)
				}
			}
			sum := 0.0
			for _, v := range vals {
				sum += v
			}
			if avg := ts.Avg(); math.Abs(avg-sum/float64(len(vals))) > 1e-6 {
				t.Errorf("avg = %v, exact %v", avg, sum/float64(len(vals)))
			}
			if ts.Min() != vals[0] || ts.Max() != vals[len(vals)-1] {
				t.Errorf("min/max not exact: %v %v vs %v %v", ts.Min(), ts.Max(), vals[0], vals[len(vals)-1])
			}
		})
	}
}

func TestBucketMidMatchesHistogramGeometry(t *testing.T) {
	h := hdr.New(1, trendHighest, trendSigFigs)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		v := int64(math.Pow(10, rng.Float64()*17))
		// Find the lowest equivalent value the way ForEachBucket reports it.
		p := hdr.NewPacked(1, trendHighest, trendSigFigs)
		_ = p.RecordValue(v)
		var low int64
		p.ForEachBucket(func(val, _ int64) bool { low = val; return false })
		mid := bucketMid(low)
		w := 2 * (mid - low)
		if w == 0 {
			w = 1
		}
		if !h.ValuesAreEquivalent(low, low+w-1) || h.ValuesAreEquivalent(low, low+w) {
			t.Fatalf("value %d: bucket from %d width %d disagrees with the histogram", v, low, w)
		}
	}
}

func TestTrendMemoryStaysFlat(t *testing.T) {
	ts := NewTrendSink()
	rng := rand.New(rand.NewPCG(5, 6))
	add := func(n int) {
		for i := 0; i < n; i++ {
			ts.Add(math.Exp(rng.NormFloat64()*1.5+math.Log(80)), t0)
		}
	}
	add(100_000)
	before := ts.MemoryBytes()
	add(1_000_000)
	after := ts.MemoryBytes()
	// The counts widen once (2 → 4 bytes) as the busiest buckets pass
	// 65,535; beyond that nothing may grow.
	if after > before*2+1024 || after > 40_000 {
		t.Fatalf("histogram grew from %d to %d bytes with 10x the samples", before, after)
	}
}

func sinkJSON(t *testing.T, s Sink) string {
	t.Helper()
	b, err := MarshalSink(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMergingTwoHalvesEqualsOneSinkOfAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{300, 5000} { // below and above the exact-values limit
		for _, typ := range []Type{Counter, Gauge, Rate, Trend} {
			t.Run(fmt.Sprintf("%s of %d values", typ, n), func(t *testing.T) {
				all, a, b := NewSink(typ), NewSink(typ), NewSink(typ)
				for i := 0; i < n; i++ {
					v := math.Round(rng.NormFloat64()*1e4) / 100
					if typ == Counter || typ == Rate {
						v = float64(rng.IntN(3)) // integer counts add exactly in any order
					}
					ts := t0.Add(time.Duration(i) * time.Millisecond)
					all.Add(v, ts)
					if rng.IntN(2) == 0 {
						a.Add(v, ts)
					} else {
						b.Add(v, ts)
					}
				}
				if err := a.Merge(b); err != nil {
					t.Fatal(err)
				}
				if got, want := sinkJSON(t, a), sinkJSON(t, all); got != want {
					t.Fatalf("merged != all\n got %.300s\nwant %.300s", got, want)
				}
			})
		}
	}
	t.Run("merging different types is an error", func(t *testing.T) {
		if err := NewSink(Trend).Merge(NewSink(Rate)); err == nil {
			t.Fatal("no error")
		}
	})
}

func TestSinkJSONRoundTrip(t *testing.T) {
	for _, typ := range []Type{Counter, Gauge, Rate, Trend} {
		s := NewSink(typ)
		for i, v := range []float64{3.5, -2, 0, 1e9, 0.000001} {
			s.Add(v, t0.Add(time.Duration(i)))
		}
		j := sinkJSON(t, s)
		back, err := UnmarshalSink([]byte(j))
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if sinkJSON(t, back) != j {
			t.Fatalf("%s: round trip changed %s", typ, j)
		}
	}
	bad := []struct{ rule, in string }{
		{"unknown type", `{"type":"histogram"}`},
		{"trend bucket counts disagree with count", `{"type":"trend","count":3,"sum_units":"0","min":0,"max":0,"pos":[[1,1]],"exact":[1,1,1]}`},
		{"trend exact values disagree with count", `{"type":"trend","count":1,"sum_units":"1","min":0,"max":0,"pos":[[1,1]],"exact":[1,1]}`},
		{"trend negative bucket count", `{"type":"trend","count":0,"sum_units":"0","min":0,"max":0,"pos":[[1,-1]]}`},
		{"trend sum not an integer", `{"type":"trend","count":1,"sum_units":"x","min":0,"max":0,"pos":[[1,1]]}`},
		{"rate passes above total", `{"type":"rate","passes":3,"total":2}`},
		{"not json", `{`},
	}
	for _, c := range bad {
		t.Run(c.rule, func(t *testing.T) {
			if _, err := UnmarshalSink([]byte(c.in)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestInt128SumIsExactAcrossSigns(t *testing.T) {
	var a int128
	vals := []int64{math.MaxInt64 / 2, math.MaxInt64 / 2, math.MaxInt64 / 2, -5, -(math.MaxInt64 / 2)}
	for _, v := range vals {
		a.add(v)
	}
	want := "9223372036854775801" // 2*(MaxInt64/2) - 5
	if got := a.big().String(); got != want {
		t.Fatalf("sum = %s, want %s", got, want)
	}
	back, err := int128FromBig(a.big())
	if err != nil || back != a {
		t.Fatalf("round trip %v %v", back, err)
	}
	var n int128
	n.add(-7)
	if n.big().String() != "-7" {
		t.Fatalf("negative = %s", n.big())
	}
	if back, _ := int128FromBig(n.big()); back != n {
		t.Fatalf("negative round trip %v", back)
	}
}

func TestParseStatAndAllowedAggregations(t *testing.T) {
	cases := []struct {
		stat  string
		typ   Type
		allow bool
	}{
		{"count", Counter, true}, {"rate", Counter, true}, {"avg", Counter, false},
		{"value", Gauge, true}, {"max", Gauge, false},
		{"rate", Rate, true}, {"count", Rate, false},
		{"avg", Trend, true}, {"min", Trend, true}, {"max", Trend, true}, {"med", Trend, true},
		{"p(99.99)", Trend, true}, {"p(0)", Trend, true}, {"p(100)", Trend, true}, {"count", Trend, false}, {"rate", Trend, false},
	}
	for _, c := range cases {
		st := stat(t, c.stat)
		if st.AllowedFor(c.typ) != c.allow {
			t.Errorf("%s on %s: allowed=%v", c.stat, c.typ, !c.allow)
		}
	}
	for _, bad := range []string{"p(101)", "p(-1)", "p(x)", "p()", "sum", "P(9)", "p(NaN)"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q) accepted", bad)
		}
	}
	if _, err := ParseTrendStats([]string{"avg", "count", "p(99.9)"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseTrendStats([]string{"value"}); err == nil {
		t.Fatal("value accepted as a trend stat")
	}
}

func TestTagJSONStringsMatchEncodingJSONExceptHTML(t *testing.T) {
	for _, s := range []string{"plain", `q"uote`, `back\slash`, "nl\n\r\t", "ctl\x01\x1f", "<a&b>", "ünï", "bad\xffutf8", "sep\u2028\u2029", ""} {
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		want := strings.TrimSuffix(buf.String(), "\n")
		if got := string(AppendJSONString(nil, s)); got != want {
			t.Errorf("%q: got %s want %s", s, got, want)
		}
	}
}

func TestBindDefinesEachMetricAndStoresIt(t *testing.T) {
	r := NewRegistry()
	var a, b *Metric
	if err := r.Bind([]Binding{{&a, "x_trend", Trend, Time}, {&b, "x_count", Counter, Default}}); err != nil {
		t.Fatal(err)
	}
	if a == nil || a != r.Get("x_trend") || b == nil || b.Type != Counter {
		t.Fatalf("bound %v %v", a, b)
	}
	var c *Metric
	if err := r.Bind([]Binding{{&c, "x_count", Gauge, Default}}); err == nil || !strings.Contains(err.Error(), "x_count") || c != nil {
		t.Fatalf("redefining x_count as a gauge: err %v, bound %v", err, c)
	}
}
