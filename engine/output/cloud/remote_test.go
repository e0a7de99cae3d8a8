package cloud

import (
	"context"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/output/cloud/capture"
)

// An interrupted follow asks the cloud to abort the run once, at once, and
// keeps polling until the cloud says it ended (k6's remote cloud run).
func TestWaitAbortsOnceWhenInterrupted(t *testing.T) {
	srv := capture.StartT(t)
	srv.RunStatuses = []string{"running"}
	cfg := Defaults()
	cfg.Token, cfg.StackID, cfg.HostV6 = "tok", 9, srv.URL
	r, err := NewRemote(cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var seen []string
	done := make(chan struct{})
	var p Progress
	go func() {
		defer close(done)
		p, err = r.Wait(ctx, 4242, 20*time.Millisecond, func(p Progress) { seen = append(seen, p.FormatStatus()) })
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end after the abort")
	}
	if err != nil || p.Status != "aborted" || len(seen) != 2 || seen[0] != "Running" || seen[1] != "Aborted" {
		t.Fatalf("progress %+v, seen %v, err %v", p, seen, err)
	}
	aborts := 0
	for _, q := range srv.Requests() {
		if q.Path == "/cloud/v6/test_runs/4242/abort" {
			aborts++
		}
	}
	if aborts != 1 {
		t.Errorf("%d abort requests, want 1", aborts)
	}
}
