package plan

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// A large population is simulated as Config.Shards simulations side by
// side (one a core), each running every Shards-th client, then merged.
// Counts add up; the open connections and REQs are summed from each
// shard's logged changes, so their mean and peak are exact; and the
// fan-out across shards is computed afterwards from each channel's logged
// audience changes and messages, so deliveries are exact too. What a shard
// cannot see of the others is approximated: the replay a REQ would get
// and a window's pages (the run's stored events are scaled by the shard
// count) and which message is the newest for reactions and agent turns.

type audienceDelta struct {
	at time.Duration
	d  int32
}

type message struct {
	at    time.Duration
	timed bool
}

// runShards runs the simulations, each on its own goroutine.
func runShards(sims []*sim) {
	var wg sync.WaitGroup
	for _, s := range sims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run()
		}()
	}
	wg.Wait()
}

// merge folds the other shards into sims[0] and adds the fan-out that
// crosses shards.
func merge(sims []*sim) *sim {
	s := sims[0]
	if len(sims) == 1 {
		return s
	}
	for _, o := range sims[1:] {
		for g, keys := range o.t.groups {
			for k, c := range keys {
				s.t.counter(g, k).merge(c)
			}
		}
		for i := range s.commEvents {
			s.commEvents[i].merge(&o.commEvents[i])
			s.commDeliveries[i].merge(&o.commDeliveries[i])
		}
		for i := range s.channels {
			c, oc := &s.channels[i], &o.channels[i]
			c.events.merge(&oc.events)
			c.deliveries.merge(&oc.deliveries)
		}
		s.hPerREQ.n += o.hPerREQ.n
		s.hPerREQ.sum += o.hPerREQ.sum
		s.hPerREQ.max = max(s.hPerREQ.max, o.hPerREQ.max)
	}
	s.conns = sumGauges(sims, func(x *sim) *gauge { return &x.conns })
	s.reqs = sumGauges(sims, func(x *sim) *gauge { return &x.reqs })
	per := s.sc.Shape.ChannelsPerCommunity
	for ch := range s.channels {
		crossFanOut(s, sims, ch, ch/per)
	}
	return s
}

// crossFanOut adds, for every message of channel ch, the subscribers the
// other shards had at that moment.
func crossFanOut(s *sim, sims []*sim, ch, community int) {
	type ev struct {
		at    time.Duration
		shard int
		d     int32 // audience change; 0 for a message
		timed bool
	}
	var evs []ev
	for i, x := range sims {
		c := &x.channels[ch]
		for _, d := range c.deltas {
			evs = append(evs, ev{at: d.at, shard: i, d: d.d})
		}
		for _, m := range c.msgs {
			evs = append(evs, ev{at: m.at, shard: i, timed: m.timed})
		}
	}
	// At one instant audience changes go first, as a single simulation
	// wakes a client that connects before the message that follows.
	isMsg := func(e ev) int {
		if e.d == 0 {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(isMsg(a), isMsg(b))
	})
	subs := make([]int32, len(sims))
	var total int32
	c := &s.channels[ch]
	for _, e := range evs {
		if e.d != 0 {
			subs[e.shard] += e.d
			total += e.d
			continue
		}
		n := float64(total - subs[e.shard])
		if n <= 0 {
			continue
		}
		s.now = e.at
		s.hot.fanout.add(e.at, n)
		s.commDeliveries[community].add(e.at, n)
		c.deliveries.add(e.at, n)
		s.bytes(0, n*s.sizes.event)
		if e.timed {
			s.hot.deliver.add(e.at, n)
		}
	}
	s.now = s.cfg.Duration
}

// sumGauges is the gauge of the shards' summed levels.
func sumGauges(sims []*sim, get func(*sim) *gauge) gauge {
	var log []gaugeDelta
	for _, x := range sims {
		log = append(log, get(x).log...)
	}
	slices.SortStableFunc(log, func(a, b gaugeDelta) int { return cmp.Compare(a.at, b.at) })
	var g gauge
	for i := 0; i < len(log); {
		at := log[i].at
		g.area += g.level * float64(at-g.since)
		g.since = at
		for ; i < len(log) && log[i].at == at; i++ {
			g.level += log[i].d
		}
		// the peak counts once every change at its instant is in
		g.peak = max(g.peak, g.level)
	}
	return g
}

// merge adds o's counts into c.
func (c *counter) merge(o *counter) {
	c.total += o.total
	for len(c.minutes) < len(o.minutes) {
		c.minutes = append(c.minutes, 0)
	}
	for i, v := range o.minutes {
		c.minutes[i] += v
	}
}
