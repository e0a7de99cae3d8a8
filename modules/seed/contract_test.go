package seed_test

import (
	"testing"

	"github.com/buzzload/buzzload/modules/client"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// The clients find seeded roots by their content: seed must write exactly
// what modules/client searches for.
func TestRootContentsMatchTheClients(t *testing.T) {
	for _, run := range []string{"smoke-1", "x", "Run.With_Caps-2"} {
		if seed.HotRootContent(run) != client.HotRootContent(run) {
			t.Errorf("hot root content differs for %q", run)
		}
		for _, ch := range []scenario.Channel{{Community: 0, Index: 0}, {Community: 3, Index: 17}} {
			for _, th := range []int{0, 1, 9} {
				if seed.ThreadRootContent(run, ch, th) != client.ThreadRootContent(run, ch, th) {
					t.Errorf("thread root content differs for %q %v %d", run, ch, th)
				}
			}
		}
	}
}
