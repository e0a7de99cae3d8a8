package store

import (
	"errors"
	"testing"
)

// FuzzBridgeQuery: any /query body either fails to decode with a
// *FilterError, is refused with a *RequestError, or is answered — never a
// panic. The seeds run as a normal test.
func FuzzBridgeQuery(f *testing.F) {
	for _, seed := range []string{
		`[{"kinds":[9],"#h":["` + chA + `"],"limit":3}]`,
		`[{"top_level":true,"#h":["` + chA + `"],"limit":2,"until":101,"before_id":"` + hexID(2) + `","include_aux":true,"include_summaries":true}]`,
		`[{"thread_window":true,"#h":["` + chA + `"],"#e":["` + hexID(1) + `"],"kinds":[9],"include_aux":true}]`,
		`[{"depth_limit":3,"#e":["` + hexID(1) + `"],"thread_cursor":0,"thread_cursor_id":""}]`,
		`[{"search":"m","page":3}]`, `[{"ids":[]}]`, `[{"#e":[]},{"authors":["` + pk(1) + `"]}]`,
		`[]`, `{}`, `[null]`, `[{"limit":1e3}]`, `[{"kinds":[-1]}]`, `[{"#h":[1]}]`,
	} {
		f.Add([]byte(seed))
	}
	s := New(Config{MaxEvents: 50})
	mustAdd(f, s, ev(1, 1, 100, 9, h(chA)))
	mustAdd(f, s, ev(2, 2, 101, 9, h(chA), replyTo(1)))
	mustAdd(f, s, ev(3, 2, 102, 7, []string{"e", hexID(1)}))
	mustAdd(f, s, ev(4, 3, 103, 9, h(chA), rootTag(1), replyTo(2)))
	rd := Reader{Signer: sharedTestKeys(), Pubkey: pk(1), Host: "h"}
	f.Fuzz(func(t *testing.T, body []byte) {
		fs, err := ParseFilters(body)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("decode error %T: %v", err, err)
			}
			return
		}
		if _, err := s.BridgeQuery(fs, rd); err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("query error %T: %v", err, err)
			}
		}
		s.Query(fs, rd)
		s.Count(fs, rd)
	})
}
