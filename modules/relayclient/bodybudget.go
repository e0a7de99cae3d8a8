package relayclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// DefaultBodyBudget bounds the response-body bytes held by all requests in
// flight through one pool: a relay answering every request with a body at
// the per-request cap (16 MiB) cost 25 MB per request in flight, 517 MB at
// 20 VUs (reliability.md F10); with the budget a run holds at most this
// much, and requests beyond it are errors that say so.
const DefaultBodyBudget = 256 << 20

// ErrBodyBudget is the error of a body that would take the pool's response
// bodies in flight beyond its budget.
var ErrBodyBudget = errors.New("response bodies in flight exceed the run's budget")

// WithBodyBudget wraps rt so that the response bodies read through it hold
// at most limit bytes at once (each body's bytes count from the read until
// its Close). limit <= 0 is DefaultBodyBudget.
func WithBodyBudget(rt http.RoundTripper, limit int64) http.RoundTripper {
	if limit <= 0 {
		limit = DefaultBodyBudget
	}
	return &budgetTransport{rt: rt, limit: limit}
}

type budgetTransport struct {
	rt    http.RoundTripper
	limit int64
	used  atomic.Int64
}

// CloseIdleConnections forwards to the pool (Module.Close calls it).
func (t *budgetTransport) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &budgetBody{rc: resp.Body, t: t}
	return resp, nil
}

// budgetBody reserves what it reads from the budget and gives it back on
// Close.
type budgetBody struct {
	rc   io.ReadCloser
	t    *budgetTransport
	held int64
	once sync.Once
}

func (b *budgetBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		if b.t.used.Add(int64(n)) > b.t.limit {
			b.t.used.Add(-int64(n))
			return 0, fmt.Errorf("%w (%d MiB)", ErrBodyBudget, b.t.limit>>20)
		}
		b.held += int64(n)
	}
	return n, err
}

func (b *budgetBody) Close() error {
	b.once.Do(func() { b.t.used.Add(-b.held) })
	return b.rc.Close()
}
