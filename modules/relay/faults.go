package relay

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Faults injects failures for tests. It is reachable only through the Go
// API (Relay.Faults); no network route exposes it. The zero state injects
// nothing. All methods are safe for concurrent use.
type Faults struct {
	// held counts HTTP requests SetHTTPLatency has held (Held).
	held        atomic.Int64
	mu          sync.Mutex
	eose        []eoseFault
	dropAfter   map[string]int64 // pubkey ("" = any) -> frames
	anyDrop     atomic.Bool      // dropAfter is not empty: every sent frame asks, most often none is set
	failOnce    map[string]int   // path -> HTTP status
	httpLatency time.Duration
	refused     map[string]string // pubkey -> reason
	everyPTag   atomic.Bool       // a kind-9000 adds every p tag (not Buzz)
	lose        map[int]int       // kind -> accepted events of that kind to pass before losing one
	anyLoss     atomic.Bool       // lose is not empty
	lost        []string          // ids acknowledged and not stored
	refuse      map[int]int       // kind -> stored events of that kind to pass before refusing one
	anyRefusal  atomic.Bool       // refuse is not empty
	refusedIDs  []string          // ids stored, delivered and refused
	deliv       deliveryFaults    // faults_delivery.go
	// kneeConns, kneeDelay: SlowDeliveriesAbove (faults_delivery.go).
	kneeConns, kneeLate atomic.Int64
	// growFrom, growRate: SlowDeliveriesGrowing.
	growFrom, growRate atomic.Int64
}

// RefuseStored makes the relay store and deliver the n-th (1-based) event
// of kind it stores from now on, then answer its author with a refusal
// ("error: injected refusal"): a relay that tells the author one thing and
// the channel another, which the never-acknowledged events check must
// find (issue 26). RefusedStored lists the ids.
func (f *Faults) RefuseStored(kind, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse == nil {
		f.refuse = map[int]int{}
	}
	f.refuse[kind] = n
	f.anyRefusal.Store(true)
}

// RefusedStored lists the events RefuseStored stored and refused.
func (f *Faults) RefusedStored() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refusedIDs...)
}

// takeRefusal reports whether the stored event with id and kind is the one
// to refuse.
func (f *Faults) takeRefusal(kind int, id string) bool {
	if !f.anyRefusal.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !countdown(f.refuse, kind) {
		return false
	}
	f.anyRefusal.Store(len(f.refuse) > 0)
	f.refusedIDs = append(f.refusedIDs, id)
	return true
}

// countdown counts one event of kind down in m: true (and the kind's entry
// gone) for the one it was waiting for.
func countdown(m map[int]int, kind int) bool {
	n, ok := m[kind]
	if !ok {
		return false
	}
	if n > 1 {
		m[kind] = n - 1
		return false
	}
	delete(m, kind)
	return true
}

// LoseAcked makes the relay acknowledge the n-th (1-based) event of kind
// it would store from now on, then drop it: not stored, not delivered —
// what a durability audit must find (issue 26). Lost lists the ids.
func (f *Faults) LoseAcked(kind, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lose == nil {
		f.lose = map[int]int{}
	}
	f.lose[kind] = n
	f.anyLoss.Store(true)
}

// Lost lists the events acknowledged and dropped by LoseAcked.
func (f *Faults) Lost() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lost...)
}

// takeLoss reports whether the event with id and kind is the one to lose.
func (f *Faults) takeLoss(kind int, id string) bool {
	if !f.anyLoss.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !countdown(f.lose, kind) {
		return false
	}
	f.anyLoss.Store(len(f.lose) > 0)
	f.lost = append(f.lost, id)
	return true
}

// ApplyEveryMemberTag makes a kind-9000 add every p tag it names, as some
// NIP-29 relays do (Buzz applies the first only): for clients that must be
// right against both.
func (f *Faults) ApplyEveryMemberTag(on bool) { f.everyPTag.Store(on) }

type eoseFault struct {
	prefix   string
	delay    time.Duration
	withhold bool
}

func newFaults() *Faults {
	return &Faults{dropAfter: map[string]int64{}, failOnce: map[string]int{}, refused: map[string]string{}}
}

// DelayEOSE delays the EOSE of every REQ whose subscription id starts with
// prefix ("" = all) by d.
func (f *Faults) DelayEOSE(prefix string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eose = append(f.eose, eoseFault{prefix: prefix, delay: d})
}

// WithholdEOSE never sends the EOSE of REQs whose id starts with prefix.
func (f *Faults) WithholdEOSE(prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eose = append(f.eose, eoseFault{prefix: prefix, withhold: true})
}

// DropAfterFrames drops (TCP close, no close frame) connections once the
// relay has sent them n frames, the AUTH challenge included. pubkey limits
// it to connections authenticated as that key ("" = every connection).
// n <= 0 removes the fault.
func (f *Faults) DropAfterFrames(pubkey string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() { f.anyDrop.Store(len(f.dropAfter) > 0) }()
	if n <= 0 {
		delete(f.dropAfter, pubkey)
		return
	}
	f.dropAfter[pubkey] = int64(n)
}

// FailHTTPOnce makes the next request to path (e.g. "/query") on any host
// fail once with status and `{"error":"fault injected"}`.
func (f *Faults) FailHTTPOnce(path string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failOnce[path] = status
}

// SetHTTPLatency delays every bridge and /buzz/v1 response by d (0 = none).
func (f *Faults) SetHTTPLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.httpLatency = d
}

// RefuseMembers makes any kind-9000 naming one of pubkeys fail with reason
// (default "restricted: member refused").
func (f *Faults) RefuseMembers(reason string, pubkeys ...string) {
	if reason == "" {
		reason = "restricted: member refused"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pk := range pubkeys {
		f.refused[pk] = reason
	}
}

// IgnoreMembers makes a kind-9000 naming one of pubkeys succeed (OK true)
// without adding it: an acknowledged add that did not happen, which only a
// read-back of the member list can see.
func (f *Faults) IgnoreMembers(pubkeys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pk := range pubkeys {
		f.refused[pk] = ignoredMember
	}
}

// ignoredMember marks an IgnoreMembers pubkey in Faults.refused.
const ignoredMember = "\x00ignore"

// Reset removes every fault.
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eose = nil
	f.dropAfter = map[string]int64{}
	f.anyDrop.Store(false)
	f.failOnce = map[string]int{}
	f.httpLatency = 0
	f.refused = map[string]string{}
	f.everyPTag.Store(false)
	f.lose = nil
	f.anyLoss.Store(false)
	f.refuse = nil
	f.anyRefusal.Store(false)
	f.kneeLate.Store(0)
	f.growRate.Store(0)
}

func (f *Faults) eoseDelay(sub string) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.eose {
		if strings.HasPrefix(sub, e.prefix) {
			return e.delay, e.withhold
		}
	}
	return 0, false
}

func (f *Faults) shouldDrop(pubkey string, sent int64) bool {
	if !f.anyDrop.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.dropAfter) == 0 {
		return false
	}
	if n, ok := f.dropAfter[""]; ok && sent >= n {
		return true
	}
	if pubkey != "" {
		if n, ok := f.dropAfter[pubkey]; ok && sent >= n {
			return true
		}
	}
	return false
}

func (f *Faults) takeHTTPFailure(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.failOnce[path]
	if ok {
		delete(f.failOnce, path)
	}
	return st
}

// Held is how many HTTP requests the latency of SetHTTPLatency has held so
// far (counted as each starts waiting): a test sees its reads in flight.
func (f *Faults) Held() int64 { return f.held.Load() }

func (f *Faults) latency() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.httpLatency
}

func (f *Faults) refusedMember(pk string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused[pk]
}
