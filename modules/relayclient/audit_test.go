package relayclient

import (
	"net/http"
	"sync"
	"testing"
)

// Issue 2: compression is never negotiated (permessage-deflate costs ~830 KiB
// per connection). The client must not even offer it in the upgrade request.
func TestAuditUpgradeNeverOffersCompression(t *testing.T) {
	var mu sync.Mutex
	var offered []string
	fr := newFakeRelay(t, func(fr *fakeRelay) {
		fr.onUpgrade = func(r *http.Request) (int, string) {
			mu.Lock()
			offered = append(offered, r.Header.Values("Sec-WebSocket-Extensions")...)
			mu.Unlock()
			return 0, ""
		}
	})
	c := connect(t, fr, &CollectSink{}, nil)
	if !c.Authenticated() {
		t.Fatal("not authenticated")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(offered) != 0 {
		t.Fatalf("the upgrade offered extensions %q; compression must never be negotiated", offered)
	}
}
