package extension

import (
	"cmp"
	"sync"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/modules/k6options"
)

// A VU of several humans (population.humans_per_vu above 1, issue 49): a
// VU is a JS runtime of ~30 KB, a human's session ~20 KB, so at 100,000
// humans one runtime per human would be most of the runner's memory.
// Global VU slot v runs the humans at positions v·per … v·per+per−1 of
// this shard's population list (the ramp's order); the ramp's VU targets
// are its counts rounded up to whole VUs (scenario.Stages). in.groups
// holds each VU's humans, one slot each.

// runGroup runs every human of this VU's group in one iteration: each
// runs session after session (as a VU of one human does, one per
// iteration) until the stop, an exit or the abort; the iteration returns
// when all of them are done.
func (in *instance) runGroup(l *loaded, p k6options.Population, st *jsmodule.State, per int) error {
	key := slotKey{l, st.Scenario}
	slots := in.groups[key]
	if slots == nil {
		var err error
		slots, err = in.newGroup(l, p, st, per)
		if slots != nil {
			in.groups[key] = slots
		}
		if err != nil {
			return err
		}
	}
	for _, sl := range slots {
		sl.sink.retag(st.Tags.TagSet())
	}
	grace := in.vu.Context()
	var wg sync.WaitGroup
	for _, sl := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !in.runSlot(l, p, sl, grace) {
			}
		}()
	}
	wg.Wait()
	return nil
}

// newGroup claims this VU's place and builds its humans. A human whose
// client cannot be built is an exit (failSlot) and idles; the group's
// first such error is returned once, as a VU of one human returns it.
func (in *instance) newGroup(l *loaded, p k6options.Population, st *jsmodule.State, per int) ([]*slot, error) {
	start, err := in.startVU(l, st)
	if err != nil {
		return nil, err
	}
	failed := func(err error) ([]*slot, error) {
		sl := in.emptySlot(l, p, st, start)
		in.failSlot(sl, err)
		return []*slot{sl}, err
	}
	vu, err := in.claimVU(l, st)
	if err != nil {
		return failed(err)
	}
	list := l.clientList(p.Kind)
	first := vu * int64(per)
	end := min(first+int64(per), int64(len(list)))
	if first >= end {
		// Not one human: the same error as a VU of one beyond the list.
		_, err := in.clientAt(l, p, st, first)
		return failed(err)
	}
	var slots []*slot
	var firstErr error
	for _, g := range list[first:end] {
		sl := in.emptySlot(l, p, st, start)
		slots = append(slots, sl)
		if err := in.buildClient(l, p, st, sl, g); err != nil {
			in.failSlot(sl, err)
			firstErr = cmp.Or(firstErr, err)
		}
	}
	return slots, firstErr
}
