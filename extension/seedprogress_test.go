package extension

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/seed"
)

// A quick seed prints nothing; a long one a line per phase end and at most
// every 5 s between (issue 26 item 7).
func TestSeedProgressInsideARun(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(1000, 0)
	p := newSeedProgress(&b, func() time.Time { return now })
	step := func(d time.Duration, pr seed.Progress) { now = now.Add(d); p.update(pr) }
	step(500*time.Millisecond, seed.Progress{Phase: "channels", Done: 8, Total: 8})
	if b.Len() != 0 {
		t.Fatalf("a quick phase printed: %q", b.String())
	}
	step(2*time.Second, seed.Progress{Phase: "posts", Done: 10, Total: 1000})  // first line after the quiet time
	step(1*time.Second, seed.Progress{Phase: "posts", Done: 20, Total: 1000})  // too soon
	step(5*time.Second, seed.Progress{Phase: "posts", Done: 600, Total: 1000}) // every 5 s
	step(1*time.Second, seed.Progress{Phase: "posts", Done: 1000, Total: 1000})
	want := "  seed: posts 10/1000 (3s)\n  seed: posts 600/1000 (9s)\n  seed: posts 1000/1000 (10s)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	var none *seedProgress
	none.update(seed.Progress{Phase: "x"}) // nil-safe
	if strings.Count(b.String(), "\n") != 3 {
		t.Error("nil printer wrote")
	}
}
