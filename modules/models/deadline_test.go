package models

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

type resultLog struct {
	mu  sync.Mutex
	res []relayclient.Result
}

func (l *resultLog) Record(r relayclient.Result) {
	l.mu.Lock()
	l.res = append(l.res, r)
	l.mu.Unlock()
}

// An agent's and a hot-thread author's HTTP requests have buzz-loadgen's
// 60 s deadline, not relayclient's 30 s default. The request runs against a
// server that never answers, under a caller context that ends after 100 ms:
// the deadline in force is the earlier one, but the error names the
// client's own request deadline, so no test waits a minute.
func TestBasicClientsHTTPDeadlineIs60s(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ws := "ws" + strings.TrimPrefix(srv.URL, "http")
	for _, kind := range []scenario.Kind{scenario.KindAgent, scenario.KindHotAuthor} {
		sc := testScenario(t, ws, srv.URL, func(s *scenario.Scenario) {
			s.Population.Agents = 1
			s.HotThread.Authors = 1
		})
		log := &resultLog{}
		c, err := New(Config{Scenario: sc, Global: sc.GlobalIndex(kind, 0), Sink: log})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, _ = c.http.Query(ctx, []relayclient.Filter{{Kinds: []int{9}, Limit: 1}}, relayclient.CallOptions{Op: "probe"})
		cancel()
		log.mu.Lock()
		if len(log.res) != 1 || !strings.Contains(log.res[0].Error, "no response within 1m0s") {
			t.Errorf("%v: results %+v, want one error naming the 1m0s deadline", kind, log.res)
		}
		log.mu.Unlock()
	}
}
