package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buzzload/buzzload/engine/segment"
)

// VU is an initialised virtual user (one script runtime), implemented by the
// integrator. A VU is used by one goroutine at a time.
type VU interface {
	// Activate binds the VU to a scenario before its first iteration there.
	// k6 clears the VU's tags and metadata here, merges the scenario's env
	// into __ENV and picks the scenario's exec function (§1.8).
	Activate(sc *ScenarioInfo)
	// RunIteration runs one iteration of the active scenario. When ctx is
	// cancelled (gracefulStop, gracefulRampDown or an abort) it must
	// interrupt the script and return promptly; the scheduler then counts the
	// iteration as interrupted. it is reused: do not keep it after returning.
	RunIteration(ctx context.Context, it *Iteration)
}

// VUFactory creates and initialises one VU (runs the init context). ids are
// assigned by the pool: idInInstance counts from 1 on this instance,
// idInTest is the striped global id (unique across instances, §3.3).
type VUFactory func(ctx context.Context, idInInstance, idInTest uint64) (VU, error)

// getVUTimeout is how long a scenario waits for a planned VU to come back to
// the pool (k6: 5 × 400 ms) before failing.
const getVUTimeout = 2 * time.Second

// ErrNoVU is returned (wrapped) when a planned VU is not available in time.
var ErrNoVU = errors.New("could not get a VU from the buffer")

// Pool is the shared set of idle VUs. Scenarios take VUs from it and give
// them back when done; arrival-rate scenarios may grow it up to its capacity.
type Pool struct {
	factory   VUFactory
	tuple     *segment.Tuple
	idle      chan *pooledVU
	nextID    atomic.Uint64
	allocated atomic.Int64
	limit     atomic.Int64 // the most VUs create makes (≤ cap(idle))
	mu        sync.Mutex   // serialises capacity checks when creating
}

type pooledVU struct {
	vu         VU
	idInstance uint64
	idTest     uint64
	it         Iteration // reused for every iteration
}

// NewPool makes an empty pool for at most capacity VUs (the plan's MaxVUs);
// t numbers the VUs (nil: not split). Unreachable from the binary (deadcode), kept: the engine
// grows its pool through NewGrowablePool; tests and benchmarks build one
// directly.
func NewPool(factory VUFactory, t *segment.Tuple, capacity int64) *Pool {
	if t == nil {
		t = segment.FullTuple()
	}
	return NewGrowablePool(factory, t, capacity, capacity)
}

// NewGrowablePool is NewPool for limit VUs whose limit Raise may lift up
// to capacity during the run (the engine passes limit = capacity since
// k6 v2 removed the externally-controlled executor's vus-max); the idle
// channel is sized for capacity.
func NewGrowablePool(factory VUFactory, t *segment.Tuple, limit, capacity int64) *Pool {
	if t == nil {
		t = segment.FullTuple()
	}
	p := &Pool{factory: factory, tuple: t, idle: make(chan *pooledVU, max(capacity, limit, 0))}
	p.limit.Store(max(limit, 0))
	return p
}

// Raise lifts the limit by n and initialises n more VUs into the pool, as
// k6 does when vus-max is raised during a run. It fails past the capacity.
func (p *Pool) Raise(ctx context.Context, n int64) error {
	p.mu.Lock()
	if p.limit.Load()+n > int64(cap(p.idle)) {
		p.mu.Unlock()
		return fmt.Errorf("cannot raise the VUs above %d during the run", cap(p.idle))
	}
	p.limit.Add(n)
	p.mu.Unlock()
	for range n {
		pv, err := p.create(ctx)
		if err != nil {
			return err
		}
		p.idle <- pv
	}
	return nil
}

// Allocated is the number of VUs created so far (the vus_max metric).
func (p *Pool) Allocated() int64 { return p.allocated.Load() }

// Capacity is the most VUs the pool will hold now.
func (p *Pool) Capacity() int64 { return p.limit.Load() }

// Init creates n VUs, up to parallel at a time, and puts them in the pool.
// It is how the integrator initialises the planned VUs before setup().
func (p *Pool) Init(ctx context.Context, n int64, parallel int) error {
	if parallel < 1 {
		parallel = 1
	}
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		errMu sync.Mutex
		first error
	)
	for w := 0; w < parallel && int64(w) < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= n {
				pv, err := p.create(ctx)
				if err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					return
				}
				p.idle <- pv
			}
		}()
	}
	wg.Wait()
	return first
}

// create makes one new VU if the pool is below capacity.
func (p *Pool) create(ctx context.Context) (*pooledVU, error) {
	p.mu.Lock()
	if p.allocated.Load() >= p.limit.Load() {
		p.mu.Unlock()
		return nil, fmt.Errorf("cannot initialise another VU: the pool is at its planned maximum of %d", p.limit.Load())
	}
	p.allocated.Add(1)
	p.mu.Unlock()
	id := p.nextID.Add(1)
	idTest := uint64(p.tuple.GlobalIndex(int64(id-1)) + 1)
	vu, err := p.factory(ctx, id, idTest)
	if err != nil {
		p.allocated.Add(-1)
		return nil, fmt.Errorf("initialising VU %d: %w", id, err)
	}
	return &pooledVU{vu: vu, idInstance: id, idTest: idTest}, nil
}

// get takes an idle VU, waiting up to getVUTimeout for one to be returned.
func (p *Pool) get(ctx context.Context) (*pooledVU, error) {
	select {
	case pv := <-p.idle:
		return pv, nil
	default:
	}
	t := time.NewTimer(getVUTimeout)
	defer t.Stop()
	select {
	case pv := <-p.idle:
		return pv, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, ErrNoVU
	}
}

// getOrCreate takes an idle VU if there is one, else creates one.
func (p *Pool) getOrCreate(ctx context.Context) (*pooledVU, error) {
	select {
	case pv := <-p.idle:
		return pv, nil
	default:
	}
	return p.create(ctx)
}

// put returns a VU; it never blocks because the channel holds every VU.
func (p *Pool) put(pv *pooledVU) { p.idle <- pv }
