package relayclient

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// batchConn is the socket as gorilla writes to it: while a Batch is open it
// keeps the bytes of every frame written (gorilla's, ours and control
// frames alike, in order) and sends them in one write when the batch ends.
// Otherwise it writes through.
//
// Why: a human's session start sends eight REQs (five live, three history)
// and later three CLOSEs; one write syscall each cost the runner and the
// relay a loopback send, a receive and a wake-up per frame (issue 16: the
// connect ramp's per-human CPU).
type batchConn struct {
	net.Conn
	mu    sync.Mutex
	depth int    // open batches
	buf   []byte // what they wrote
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.depth > 0 {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	return b.Conn.Write(p)
}

func (b *batchConn) begin() {
	b.mu.Lock()
	b.depth++
	b.mu.Unlock()
}

// end closes a batch; the last one sends what was kept, by deadline.
func (b *batchConn) end(deadline time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.depth--
	if b.depth > 0 || len(b.buf) == 0 {
		return nil
	}
	buf := b.buf
	b.buf = nil
	_ = b.Conn.SetWriteDeadline(deadline)
	_, err := b.Conn.Write(buf)
	return err
}

// Batch runs fn with the connection's writes held back and sends what fn
// wrote (REQs, CLOSEs, publishes) in one write when it returns: one
// syscall and one wake-up of the relay instead of one per frame. Batches
// nest; the outermost sends. Inside fn a write does not fail: a failure of
// the batch's write ends the connection (as a failed write always does),
// which settles what fn started as the connection's end, and Batch returns
// it. Nothing is sent until fn returns, so fn must not wait for an answer
// to what it wrote (Publish, SubscribeEOSE, Sub.Wait would time out).
func (c *Conn) Batch(fn func()) error {
	if c.batch == nil {
		fn()
		return nil
	}
	c.batch.begin()
	ended := false
	defer func() {
		if !ended { // fn panicked: do not leave the connection holding writes
			_ = c.batch.end(time.Now().Add(c.cfg.WriteTimeout))
		}
	}()
	fn()
	ended = true
	if err := c.batch.end(time.Now().Add(c.cfg.WriteTimeout)); err != nil {
		err = fmt.Errorf("write: %w", err)
		c.abort(err)
		return err
	}
	return nil
}
