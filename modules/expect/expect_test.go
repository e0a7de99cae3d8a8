package expect

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	s, err := Compile([]Rule{
		{Op: "publish", Text: "rate-limited:"},
		{Op: "desktop_*", Regex: `^restricted: too many explicit channels`, Level: LevelIgnore},
		{Op: "http_events"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op, text string
		want     int
	}{
		{"publish", "rate-limited: slow down", 0},
		{"publish", "blocked: not a member", -1},
		{"publish_x", "rate-limited: slow down", -1},
		{"desktop_live_eose", "restricted: too many explicit channels (129 > 128)", 1},
		{"desktop_live_eose", "error: restricted: too many explicit channels", -1},
		{"http_events", "anything at all", 2},
	} {
		if got := s.Match(c.op, c.text); got != c.want {
			t.Errorf("Match(%q, %q) = %d, want %d", c.op, c.text, got, c.want)
		}
	}
	if s.Rule(0).Level != LevelWarn {
		t.Errorf("default level %q", s.Rule(0).Level)
	}
	var none *Set
	if none.Match("publish", "x") != -1 || none.Len() != 0 {
		t.Error("a nil set matched")
	}
}

func TestBadRulesNameTheirKey(t *testing.T) {
	p := Check("expect", []Rule{
		{Op: "", Text: "x"},
		{Op: "[", Level: "loud"},
		{Op: "publish", Text: "a", Regex: "b"},
		{Op: "publish", Regex: "(unclosed"},
	})
	var got []string
	for _, x := range p {
		got = append(got, x.Key)
	}
	want := "expect[0].op expect[1].op expect[1].level expect[2].regex expect[3].regex"
	if strings.Join(got, " ") != want {
		t.Errorf("keys %q, want %q (%+v)", strings.Join(got, " "), want, p)
	}
	if _, err := Compile([]Rule{{Op: "publish", Regex: "(unclosed"}}); err == nil || !strings.Contains(err.Error(), "expect[0].regex") {
		t.Errorf("Compile: %v", err)
	}
	u := Unknown("expect", []Rule{{Op: "publsh"}, {Op: "desktop_*"}}, []string{"publish", "desktop_roster"})
	if len(u) != 1 || u[0].Key != "expect[0].op" || !strings.Contains(u[0].Msg, "publsh") {
		t.Errorf("Unknown: %+v", u)
	}
}
