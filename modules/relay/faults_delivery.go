package relay

import (
	"sync/atomic"
	"time"
)

// Delivery faults for the delivery ledger's tests (issue 40): a relay that
// loses chosen live deliveries, or hands an event to a subscriber of
// another community. Reachable only through Relay.Faults.

// Delivery names one live delivery a fault affected: the event, the
// subscriber's pubkey and its subscription id.
type Delivery struct {
	Event, Recipient, Sub string
}

type deliveryFaults struct {
	any     atomic.Bool // a drop or a leak is armed
	kind    int
	every   int // drop every n-th live delivery of kind ...
	left    int // ... this many more times
	count   int
	dropped []Delivery
	leak    int // leak the next event of this kind (0: none)
	leaked  []Delivery
}

// DropDeliveries makes the relay skip every n-th live delivery of events of
// kind (counted over every subscriber, from now on), count times in all:
// the event is stored and acknowledged and reaches everyone else.
// Dropped lists what it skipped.
func (f *Faults) DropDeliveries(kind, every, count int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := &f.deliv
	d.kind, d.every, d.left, d.count = kind, max(every, 1), count, 0
	d.any.Store(count > 0 || d.leak != 0)
}

// Dropped lists the live deliveries DropDeliveries skipped.
func (f *Faults) Dropped() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Delivery(nil), f.deliv.dropped...)
}

// LeakNext makes the relay deliver the next event of kind, besides its
// own subscribers, to one channel subscriber of another community: the
// tenant-confinement failure Buzz's model forbids (block/buzz
// docs/spec/MultiTenantRelay.tla). Leaked lists it.
func (f *Faults) LeakNext(kind int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliv.leak = kind
	f.deliv.any.Store(true)
}

// Leaked lists the deliveries LeakNext made.
func (f *Faults) Leaked() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Delivery(nil), f.deliv.leaked...)
}

// takeDrop reports whether this live delivery is one to skip.
func (f *Faults) takeDrop(kind int, id, recipient, sub string) bool {
	if !f.deliv.any.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	d := &f.deliv
	if d.left <= 0 || kind != d.kind {
		return false
	}
	d.count++
	if d.count%d.every != 0 {
		return false
	}
	d.left--
	d.dropped = append(d.dropped, Delivery{Event: id, Recipient: recipient, Sub: sub})
	d.any.Store(d.left > 0 || d.leak != 0)
	return true
}

// leakArmed reports whether an event of kind is to be leaked (LeakNext):
// it stays armed until a leak was made.
func (f *Faults) leakArmed(kind int) bool {
	if !f.deliv.any.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deliv.leak != 0 && f.deliv.leak == kind
}

// leakAcross delivers e to the first channel subscriber of another
// community than c (the LeakNext fault).
func (r *Relay) leakAcross(c *community, e *entry) {
	r.mu.Lock()
	var others []*community
	for _, o := range r.comms {
		if o != c {
			others = append(others, o)
		}
	}
	r.mu.Unlock()
	for _, o := range others {
		o.subs.mu.RLock()
		for _, l := range o.subs.byChannel {
			if len(l.ents) == 0 {
				continue
			}
			s := l.ents[0].s
			o.subs.mu.RUnlock()
			f := r.faults
			f.mu.Lock()
			armed := f.deliv.leak != 0
			f.deliv.leak = 0
			f.deliv.any.Store(f.deliv.left > 0)
			f.mu.Unlock()
			if armed && s.conn.deliver(s, e) {
				f.mu.Lock()
				f.deliv.leaked = append(f.deliv.leaked, Delivery{Event: e.Event.ID, Recipient: s.reader, Sub: s.id})
				f.mu.Unlock()
			}
			return
		}
		o.subs.mu.RUnlock()
	}
}

// SlowDeliveriesAbove is a synthetic capacity knee (issue 44's benchmark
// and tests): while more than k WebSocket connections are open, every live
// delivery leaves d late (the publish's OK does not wait for it). k < 0
// turns it off.
func (f *Faults) SlowDeliveriesAbove(k int, d time.Duration) {
	f.kneeConns.Store(int64(k))
	f.kneeLate.Store(int64(d))
}

// SlowDeliveriesGrowing makes every live delivery leave later and later:
// each more for every second since the call (a relay getting steadily
// slower: the drift check's test). 0 turns it off.
func (f *Faults) SlowDeliveriesGrowing(each time.Duration) {
	f.growFrom.Store(time.Now().UnixNano())
	f.growRate.Store(int64(each))
}

// kneeDelay is how late a delivery leaves with conns open (0: on time).
func (f *Faults) kneeDelay(conns int64) time.Duration {
	if r := f.growRate.Load(); r > 0 {
		return time.Duration(float64(r) * time.Since(time.Unix(0, f.growFrom.Load())).Seconds())
	}
	d := f.kneeLate.Load()
	if d == 0 || conns <= f.kneeConns.Load() {
		return 0
	}
	return time.Duration(d)
}
