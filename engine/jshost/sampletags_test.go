package jshost

import (
	"strconv"
	"testing"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/metrics"
)

// The memo returns what withTags(base, tagArg(obj)) builds, and reads the
// object every time: a mutated object, another base or another order of
// keys are never served a stale set.
func TestSampleTagsMemoNeverServesAStaleSet(t *testing.T) {
	rt := sobek.New()
	var st sampleTags
	base := metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "s"}, metrics.Tag{Key: "group", Value: ""})
	other := metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "t"})
	obj, err := rt.RunString(`({op: "a", scenario: "mine", n: 3})`)
	if err != nil {
		t.Fatal(err)
	}
	want := func(b metrics.TagSet, v sobek.Value) metrics.TagSet {
		extra, err := tagArg(rt, v)
		if err != nil {
			t.Fatal(err)
		}
		return withTags(b, extra)
	}
	check := func(rule string, b metrics.TagSet, v sobek.Value) {
		t.Helper()
		got, err := st.tagSet(b, v)
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		if w := want(b, v); !got.Equal(w) {
			t.Errorf("%s: %v, want %v", rule, got, w)
		}
	}
	check("first", base, obj)
	check("again (memo)", base, obj)
	check("another base", other, obj)
	o := obj.(*sobek.Object)
	_ = o.Set("op", "b")
	check("mutated value", base, obj)
	_ = o.Set("extra", true)
	check("added key", base, obj)
	reordered, _ := rt.RunString(`({n: 3, scenario: "mine", op: "b", extra: true})`)
	check("same pairs, other order", base, reordered)
	empty, _ := rt.RunString(`({})`)
	if got, _ := st.tagSet(base, empty); !got.Equal(base) {
		t.Errorf("empty object: %v", got)
	}
	if got, _ := st.tagSet(base, sobek.Undefined()); !got.Equal(base) {
		t.Errorf("undefined: %v", got)
	}
	bad, _ := rt.RunString(`({op: {}})`)
	if _, err := st.tagSet(base, bad); err == nil || err.Error() != `tag "op": invalid tag value type map[string]interface {} (want string, number or boolean)` {
		t.Errorf("object value: %v", err)
	}
	if _, err := st.tagSet(base, rt.ToValue("x")); err == nil {
		t.Error("a string was taken as tags")
	}
	for i := 0; i < 3*sampleTagsMax; i++ { // the memo stays bounded
		v, _ := rt.RunString(`({i: "` + string(rune('a'+i%26)) + `", j: ` + strconv.Itoa(i) + `})`)
		check("many", base, v)
	}
	if st.n > sampleTagsMax {
		t.Errorf("memo holds %d sets, bound %d", st.n, sampleTagsMax)
	}
}
