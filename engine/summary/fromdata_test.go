package summary

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TextFromData renders, from handleSummary's data, what the engine prints by
// itself, so textSummary and the Buzz report keep k6's summary unchanged.
func TestTextFromDataMatchesText(t *testing.T) {
	const thr = `{"http_req_duration":["p(95)<200"],"http_req_duration{expected_response:true}":["max<100"],
		"http_req_failed":["rate<0.1"],"my_counter":["count>5"]}`
	for _, color := range []bool{false, true} {
		_, in := newRun(t, Options{Color: color}, thr)
		want, err := Text(in)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Data(in)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(d)
		got, err := TextFromData(raw, TextOptions{Color: color})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			diffLines(t, fmt.Sprintf("color=%v ", color), got, want)
		}
		if !strings.Contains(got, "✗ 'count>5' count=3") {
			t.Errorf("failed threshold not shown:\n%s", got)
		}
	}
	_, in := newRun(t, Options{}, thr)
	d, _ := Data(in)
	raw, _ := json.Marshal(d)
	ind, _ := TextFromData(raw, TextOptions{Indent: "> "})
	for _, l := range strings.Split(ind, "\n") {
		if l != "" && !strings.HasPrefix(l, "> ") {
			t.Fatalf("line without the indent: %q", l)
		}
	}
	if _, err := TextFromData([]byte(`[1]`), TextOptions{}); err == nil {
		t.Error("an array is not summary data")
	}
}
