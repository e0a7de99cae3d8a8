package relayclient

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// frameLog is what a script relay received, in order.
type frameLog struct {
	mu  sync.Mutex
	got []string
}

func (l *frameLog) add(s string) {
	l.mu.Lock()
	l.got = append(l.got, s)
	l.mu.Unlock()
}

func (l *frameLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// verbAndID is a client frame's verb and subscription id.
func verbAndID(t *testing.T, frame string) string {
	t.Helper()
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(frame), &arr); err != nil || len(arr) < 2 {
		t.Fatalf("not a client frame: %s", frame)
	}
	var verb, id string
	_ = json.Unmarshal(arr[0], &verb)
	_ = json.Unmarshal(arr[1], &id)
	return verb + " " + id
}

// Frames written inside a Batch reach the relay only when it returns, all
// of them and in the order written, on both read paths; a nested batch
// sends nothing at its own end; writes after the batch go out at once.
func TestBatchSendsItsFramesWhenItEnds(t *testing.T) {
	for _, path := range readPaths {
		t.Run(path.name, func(t *testing.T) {
			var log frameLog
			url := scriptRelay(t, func(ws *websocket.Conn) {
				for {
					_, b, err := ws.ReadMessage()
					if err != nil {
						return
					}
					log.add(string(b))
				}
			})
			c := dialPath(t, url, path.noPoller, nil)
			opt := func(id string) SubOptions { return SubOptions{ID: id, EOSETimeout: -1} }
			err := c.Batch(func() {
				if _, err := c.Subscribe([]Filter{{Kinds: []int{1}}}, opt("a")); err != nil {
					t.Errorf("subscribe a: %v", err)
				}
				var b *Sub
				_ = c.Batch(func() {
					var err error
					if b, err = c.Subscribe([]Filter{{Kinds: []int{2}}}, opt("b")); err != nil {
						t.Errorf("subscribe b: %v", err)
					}
				})
				if err := b.Close(); err != nil {
					t.Errorf("close b: %v", err)
				}
				if _, err := c.Subscribe([]Filter{{Kinds: []int{3}}}, opt("c")); err != nil {
					t.Errorf("subscribe c: %v", err)
				}
				// Unbatched, the first REQ is at the relay within a
				// millisecond or two on loopback.
				time.Sleep(150 * time.Millisecond)
				if got := log.list(); len(got) != 0 {
					t.Errorf("the relay got %d frames before the batch ended: %q", len(got), got)
				}
			})
			if err != nil {
				t.Fatalf("Batch: %v", err)
			}
			want := []string{"REQ a", "REQ b", "CLOSE b", "REQ c"}
			waitFor(t, "the batch's frames", func() bool { return len(log.list()) >= len(want) })
			got := log.list()
			for i, w := range want {
				if v := verbAndID(t, got[i]); v != w {
					t.Fatalf("frame %d is %q, want %q (all: %q)", i, v, w, got)
				}
			}
			if _, err := c.Subscribe([]Filter{{Kinds: []int{4}}}, opt("d")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the frame after the batch", func() bool { return len(log.list()) == len(want)+1 })
			if v := verbAndID(t, log.list()[len(want)]); v != "REQ d" {
				t.Fatalf("after the batch the relay got %q, want REQ d", v)
			}
		})
	}
}
