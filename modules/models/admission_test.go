package models

import (
	"testing"
	"time"
)

// The connect-time pacer never puts more than its limit in any trailing
// window, and waits exactly until the oldest frame leaves it.
func TestAdmissionPacesWithinTheWindow(t *testing.T) {
	a := &admission{limit: 3, window: 5 * time.Second}
	t0 := time.Unix(1000, 0)
	now := t0
	var sent []time.Time
	for i := 0; i < 10; i++ {
		now = now.Add(a.wait(now))
		a.record(now)
		sent = append(sent, now)
	}
	for i := range sent {
		n := 0
		for _, s := range sent {
			if !s.Before(sent[i]) && s.Before(sent[i].Add(5*time.Second)) {
				n++
			}
		}
		if n > 3 {
			t.Fatalf("%d frames in the window starting at frame %d: %v", n, i, sent)
		}
	}
	if got := sent[3].Sub(t0); got != 5*time.Second {
		t.Fatalf("the fourth frame went after %v, want 5s", got)
	}
	if got := chunkChannels([]string{"a", "b", "c", "d", "e"}, 2); len(got) != 3 || len(got[2]) != 1 {
		t.Fatalf("chunks %v", got)
	}
}
