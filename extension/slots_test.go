package extension

import (
	"context"
	"testing"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/eventloop"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// fakeVU is just enough of a VU for the slot mapping: its test options.
type fakeVU struct {
	opts []byte
	met  jsmodule.Metrics
}

func (f fakeVU) Runtime() *sobek.Runtime              { return nil }
func (f fakeVU) Context() context.Context             { return context.Background() }
func (f fakeVU) ScenarioContext() context.Context     { return context.Background() }
func (f fakeVU) TestOptions() []byte                  { return f.opts }
func (f fakeVU) RegisterCallback() eventloop.Enqueue  { return nil }
func (f fakeVU) State() *jsmodule.State               { return nil }
func (f fakeVU) InitEnv() *jsmodule.InitEnv           { return nil }
func (f fakeVU) Metrics() jsmodule.Metrics            { return f.met }
func (f fakeVU) AddDataTransfer(sent, received int64) {}

// instanceWithSegment is a VU of a run with this segment.
func instanceWithSegment(t *testing.T, seg, seq string) *instance {
	t.Helper()
	opts := `{"executionSegment": ` + seg + `, "executionSegmentSequence": ` + seq + `}`
	return &instance{m: New(Options{}), vu: fakeVU{opts: []byte(opts)}}
}

// Two instances of a split run map their local slots 0, 1, 2, ... onto
// disjoint global slots that together are 0, 1, 2, ...
func TestGlobalSlotsOfExecutionSegmentsAreDisjoint(t *testing.T) {
	seen := map[int64]string{}
	for _, seg := range []string{`"0:1/3"`, `"1/3:1"`} {
		in := instanceWithSegment(t, seg, `"0,1/3,1"`)
		for local := int64(0); local < 30; local++ {
			g, err := in.m.globalSlot(in, local)
			if err != nil {
				t.Fatal(err)
			}
			if other, dup := seen[g]; dup {
				t.Fatalf("global slot %d used by %s and %s", g, other, seg)
			}
			seen[g] = seg
		}
	}
	for g := int64(0); g < 40; g++ {
		if _, ok := seen[g]; !ok {
			t.Errorf("global slot %d unused: the instances leave a gap", g)
		}
	}
	// Without a segment a slot is itself.
	in := instanceWithSegment(t, "null", "null")
	if g, err := in.m.globalSlot(in, 7); err != nil || g != 7 {
		t.Errorf("no segment: slot 7 -> %d, %v", g, err)
	}
	bad := instanceWithSegment(t, `"2:1"`, "null")
	if _, err := bad.m.globalSlot(bad, 0); err == nil {
		t.Error("a broken segment was accepted")
	}
}
