package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

func TestParseFilterReportsWhichFilterAndKey(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		index int
		key   string
		want  string // substring of the message
	}{
		{"body must be an array", `{"kinds":[1]}`, -1, "", "JSON array"},
		{"body must be valid JSON", `[{"kinds":[1]`, -1, "", "invalid JSON"},
		{"a filter must be an object", `[{}, 5]`, 1, "", "must be a JSON object, got a number"},
		{"ids must be 64 hex", `[{"ids":["abc"]}]`, 0, "ids", `element 0: "abc" is not 64 hex characters`},
		{"authors must be an array", `[{"authors":"` + pk(1) + `"}]`, 0, "authors", "must be an array, got a string"},
		{"kinds must be integers", `[{},{"kinds":[1,"9"]}]`, 1, "kinds", "element 1 must be an integer, got a string"},
		{"kinds must be in range", `[{"kinds":[70000]}]`, 0, "kinds", "outside 0–65535"},
		{"since must be an integer", `[{"since":1.5}]`, 0, "since", "must be an integer, got 1.5"},
		{"until must not be negative", `[{"until":-1}]`, 0, "until", "must not be negative"},
		{"limit must not be null", `[{"limit":null}]`, 0, "limit", "must be an integer, got null"},
		{"tag filter must be an array", `[{"#e":"x"}]`, 0, "#e", "must be an array"},
		{"tag values must be strings", `[{"#p":[1]}]`, 0, "#p", "element 0 must be a string, got a number"},
		{"include_aux must be boolean", `[{"include_aux":"true"}]`, 0, "include_aux", "must be a boolean, got a string"},
		{"thread_window must be boolean", `[{"thread_window":1}]`, 0, "thread_window", "must be a boolean"},
		{"before_id must be a string", `[{"before_id":5}]`, 0, "before_id", "must be a string"},
		{"depth_limit must be an integer", `[{"depth_limit":"100"}]`, 0, "depth_limit", "must be an integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFilters([]byte(c.body))
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FilterError", err)
			}
			if fe.Index != c.index || fe.Key != c.key || !strings.Contains(fe.Reason, c.want) {
				t.Fatalf("got index %d key %q reason %q; want %d %q containing %q", fe.Index, fe.Key, fe.Reason, c.index, c.key, c.want)
			}
			if c.key != "" && !strings.Contains(err.Error(), `"`+c.key+`"`) {
				t.Fatalf("message %q does not name the key", err)
			}
		})
	}
}

func TestParseFilterDecodesEveryField(t *testing.T) {
	upper := strings.ToUpper(hexID(7))
	f := filter(t, `{"ids":["`+upper+`"],"authors":["`+pk(1)+`"],"kinds":[9,40002],"since":10,"until":20,"limit":5,
		"#h":["`+chA+`"],"#buzz-channel":["x"],"before_id":"`+hexID(3)+`","search":"hi","search_mode":"prefix","page":2,
		"top_level":true,"include_aux":true,"include_summaries":true,"depth_limit":100,"threadCursor":7,"threadCursorId":"ab",
		"feed_types":["mentions"],"read_state_snapshot":1,"consistency":"strong","unknown_key":{"x":1}}`)
	switch {
	case f.IDs[0] != hexID(7):
		t.Fatalf("ids not lower-cased: %v", f.IDs)
	case f.Authors[0] != pk(1) || len(f.Kinds) != 2 || *f.Since != 10 || *f.Until != 20 || *f.Limit != 5:
		t.Fatalf("NIP-01 fields wrong: %+v", f)
	case f.Tags["h"][0] != chA || f.Tags["buzz-channel"][0] != "x":
		t.Fatalf("tags wrong: %v", f.Tags)
	case f.BeforeID != hexID(3) || f.Search != "hi" || f.SearchMode != "prefix" || *f.Page != 2:
		t.Fatalf("paging/search wrong: %+v", f)
	case !f.TopLevel || !f.IncludeAux || !f.IncludeSummaries || *f.DepthLimit != 100:
		t.Fatalf("window flags wrong: %+v", f)
	case *f.ThreadCursor != 7 || f.ThreadCursorID != "ab":
		t.Fatalf("camelCase legacy cursor not accepted: %+v", f)
	case f.FeedTypes[0] != "mentions" || *f.ReadStateSnapshot != 1 || f.Consistency != "strong":
		t.Fatalf("feed/snapshot fields wrong: %+v", f)
	case !f.Has("unknown_key") || f.Has("nope"):
		t.Fatalf("Has does not report the keys present")
	}
	// NIP-CW: only JSON true selects the window path.
	for _, v := range []string{`"true"`, `1`, `false`, `null`} {
		if g := filter(t, `{"top_level":`+v+`}`); g.TopLevel {
			t.Fatalf("top_level %s selected the window path", v)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	e := ev(5, 1, 100, 9, h(chA), []string{"p", pk(2)}, []string{"buzz-channel", "c1"})
	e.Content = "Hello brave New world"
	many := `[` + strings.Repeat(`"`+pk(9)+`",`, 20) + `"` + pk(1) + `"]`
	cases := []struct {
		name   string
		filter string
		want   bool
	}{
		{"empty filter matches everything", `{}`, true},
		{"ids match", `{"ids":["` + hexID(5) + `"]}`, true},
		{"other ids do not", `{"ids":["` + hexID(6) + `"]}`, false},
		{"empty ids list matches nothing", `{"ids":[]}`, false},
		{"authors match through a long list (set path)", `{"authors":` + many + `}`, true},
		{"kinds must contain the kind", `{"kinds":[7,40002]}`, false},
		{"since is inclusive", `{"since":100}`, true},
		{"since after excludes", `{"since":101}`, false},
		{"until is inclusive", `{"until":100}`, true},
		{"until before excludes", `{"until":99}`, false},
		{"before_id at the same second keeps higher ids", `{"until":100,"before_id":"` + hexID(4) + `"}`, true},
		{"before_id at the same second drops the cursor itself", `{"until":100,"before_id":"` + hexID(5) + `"}`, false},
		{"before_id at the same second drops lower ids", `{"until":100,"before_id":"` + hexID(6) + `"}`, false},
		{"before_id with a later until keeps the event", `{"until":101,"before_id":"` + hexID(9) + `"}`, true},
		{"#h matches the h tag", `{"#h":["` + chA + `"]}`, true},
		{"#p must match a p tag", `{"#p":["` + pk(3) + `"]}`, false},
		{"multi-letter tag filters match", `{"#buzz-channel":["c1"]}`, true},
		{"empty tag list matches nothing", `{"#p":[]}`, false},
		{"search needs every term, any case", `{"search":"brave WORLD"}`, true},
		{"search misses an absent term", `{"search":"brave moon"}`, false},
		{"prefix search matches word starts", `{"search":"bra wor","search_mode":"prefix"}`, true},
		{"prefix search refuses word middles", `{"search":"rave","search_mode":"prefix"}`, false},
		{"window fields do not filter", `{"top_level":true,"include_aux":true,"limit":0}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filter(t, c.filter)
			if got := f.Matches(e); got != c.want {
				t.Fatalf("Matches = %v, want %v", got, c.want)
			}
		})
	}
	// A reaction without an h tag matches #h through the channel it was placed in.
	r := ev(6, 2, 101, nostr.KindReaction, []string{"e", hexID(5)})
	f := filter(t, `{"#h":["`+chA+`"]}`)
	if f.Matches(r) || !f.MatchesInChannel(r, chA) || f.MatchesInChannel(r, chB) {
		t.Fatalf("MatchesInChannel does not apply the placed channel")
	}
}
