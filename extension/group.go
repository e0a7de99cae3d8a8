package extension

import (
	"context"
	"sync"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/modules/k6options"
)

// group is one VU's humans when population.humans_per_vu is above 1
// (issue 49): a VU is a JS runtime of ~30 KB, a human's session ~20 KB, so
// at 100,000 humans one runtime per human would be most of the runner's
// memory. Global VU slot v runs the humans at positions v·per … v·per+per−1
// of this shard's population list (the ramp's order); the ramp's VU
// targets are its counts rounded up to whole VUs (scenario.Stages).
type group struct {
	slots []*slot
}

// runGroup runs every human of this VU's group in one iteration: each
// runs session after session (as a VU of one human does, one per
// iteration) until the stop, an exit or the abort; the iteration returns
// when all of them are done.
func (in *instance) runGroup(l *loaded, p k6options.Population, st *jsmodule.State, per int) error {
	key := slotKey{l, st.Scenario}
	g := in.groups[key]
	if g == nil {
		var err error
		g, err = in.newGroup(l, p, st, per)
		if g != nil {
			in.groups[key] = g
		}
		if err != nil {
			return err
		}
	}
	for _, sl := range g.slots {
		sl.sink.retag(st.Tags.TagSet())
	}
	grace := in.vu.Context()
	var wg sync.WaitGroup
	for _, sl := range g.slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.runSlots(l, p, sl, grace)
		}()
	}
	wg.Wait()
	return nil
}

// runSlots runs sl's sessions one after another until it has none left.
func (in *instance) runSlots(l *loaded, p k6options.Population, sl *slot, grace context.Context) {
	for !in.runSlot(l, p, sl, grace) {
	}
}

// newGroup claims this VU's place and builds its humans. A human whose
// client cannot be built is an exit (failSlot) and idles; the group's
// first such error is returned once, as a VU of one human returns it.
func (in *instance) newGroup(l *loaded, p k6options.Population, st *jsmodule.State, per int) (*group, error) {
	start, err := in.startVU(l, st)
	if err != nil {
		return nil, err
	}
	g := &group{}
	vu, err := in.claimVU(l, st)
	if err != nil {
		sl := in.emptySlot(l, p, st, start)
		in.failSlot(sl, err)
		g.slots = append(g.slots, sl)
		return g, err
	}
	n := int64(len(l.clientList(p.Kind)))
	first := vu * int64(per)
	if first >= n {
		// Not one human: the same error as a VU of one beyond the list.
		_, err := in.clientAt(l, p, st, first)
		sl := in.emptySlot(l, p, st, start)
		in.failSlot(sl, err)
		g.slots = append(g.slots, sl)
		return g, err
	}
	var firstErr error
	for pos := first; pos < first+int64(per) && pos < n; pos++ {
		sl := in.emptySlot(l, p, st, start)
		g.slots = append(g.slots, sl)
		gi, err := in.clientAt(l, p, st, pos)
		if err == nil {
			err = in.buildClient(l, p, st, sl, gi)
		}
		if err != nil {
			in.failSlot(sl, err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return g, firstErr
}
