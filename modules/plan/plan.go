package plan

import (
	"fmt"
	"time"

	"github.com/buzzload/buzzload/modules/scenario"
)

// Rate is one counted stream over the simulated time: its total, mean rate
// and the rate of its busiest minute.
type Rate struct {
	Name             string  `json:"name"`
	Count            float64 `json:"count"`
	PerSec           float64 `json:"per_sec"`
	PeakMinutePerSec float64 `json:"peak_minute_per_sec"`
}

// Level is a quantity over time: its time-weighted mean and its peak.
type Level struct {
	Mean float64 `json:"mean"`
	Peak float64 `json:"peak"`
}

// ChannelLoad is one channel's (or community's) traffic.
type ChannelLoad struct {
	Community  int     `json:"community"`
	Channel    int     `json:"channel,omitempty"`
	Members    int     `json:"members,omitempty"`
	Events     Rate    `json:"messages"`
	Deliveries Rate    `json:"deliveries"`
	FanOut     float64 `json:"fan_out"` // deliveries per message
}

// Result is what the relay would see.
type Result struct {
	RunID    string         `json:"run_id"`
	Mode     string         `json:"desktop_mode"`
	Duration time.Duration  `json:"duration_ns"`
	Clients  map[string]int `json:"clients"` // by kind, at the end

	Ops           []Rate        `json:"ops"`       // as a run's report names them
	Endpoints     []Rate        `json:"endpoints"` // WebSocket frames and HTTP paths
	Kinds         []Rate        `json:"event_kinds"`
	Connects      []Rate        `json:"connects"` // by reason: start, session end, renewal, reconnect
	Connections   Level         `json:"open_connections"`
	Subscriptions Level         `json:"open_subscriptions"`
	HPerREQ       Level         `json:"h_channels_per_req"` // mean and max over REQs naming channels
	Deliveries    Rate          `json:"deliveries"`
	Bytes         []Rate        `json:"bytes"`
	Communities   []ChannelLoad `json:"communities"`
	Largest       ChannelLoad   `json:"largest_channel"`
}

// Op returns the op named name (zero when absent).
func (r *Result) Op(name string) Rate {
	for _, o := range r.Ops {
		if o.Name == name {
			return o
		}
	}
	return Rate{Name: name}
}

// Run simulates cfg's clients and returns what the relay would see.
func Run(cfg Config) (*Result, error) {
	n := max(cfg.Shards, 1)
	sims := make([]*sim, n)
	for i := range sims {
		s, err := newSim(cfg)
		if err != nil {
			return nil, err
		}
		sims[i] = s
	}
	sc := cfg.Scenario
	users := sc.PeakUsers()
	res := &Result{RunID: sc.RunID, Mode: sc.Desktop.Mode, Duration: cfg.Duration, Clients: map[string]int{}}
	if res.Mode == "" {
		res.Mode = scenario.ModeCurrent
	}
	// Channel sizes first: a client in a channel with more members than a
	// co-member limit has exactly that many co-members (coMemberCount).
	members := make([]int32, len(sims[0].channels))
	for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
		for _, g := range sc.Clients(k, users, scenario.Shard{}) {
			for _, c := range sc.MemberChannels(g) {
				members[sims[0].dense(c)]++
			}
		}
	}
	for _, s := range sims {
		s.chanSize = members
	}
	next := 0 // clients are dealt to the shards in turn
	for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
		starts := cfg.Starts[k]
		for i, g := range sc.Clients(k, users, scenario.Shard{}) {
			if i >= len(starts) || starts[i] >= cfg.Duration {
				break
			}
			s := sims[next%n]
			next++
			a, err := s.newActor(k, g, users)
			if err != nil {
				return nil, err
			}
			res.Clients[k.String()]++
			s.add(a, starts[i])
		}
	}
	runShards(sims)
	merge(sims).result(res)
	return res, nil
}

func (s *sim) newActor(k scenario.Kind, g int, users float64) (actor, error) {
	switch k {
	case scenario.KindHuman:
		return newHuman(s, g, users), nil
	case scenario.KindDesktop:
		return newDesk(s, g, users)
	case scenario.KindHotAuthor:
		return newHotAuthor(s, g), nil
	case scenario.KindAgent:
		return newAgent(s, g)
	}
	return nil, fmt.Errorf("plan: client %d: kind %v is not simulated", g, k)
}

func (s *sim) result(r *Result) {
	d := s.cfg.Duration
	r.Ops = s.t.rows("op", d)
	r.Endpoints = s.t.rows("endpoint", d)
	r.Kinds = s.t.rows("kind", d)
	r.Connects = s.t.rows("connects", d)
	r.Bytes = s.t.rows("bytes", d)
	r.Connections = Level{Mean: s.conns.mean(d), Peak: s.conns.peak}
	r.Subscriptions = Level{Mean: s.reqs.mean(d), Peak: s.reqs.peak}
	if s.hPerREQ.n > 0 {
		r.HPerREQ = Level{Mean: s.hPerREQ.sum / s.hPerREQ.n, Peak: s.hPerREQ.max}
	}
	if c := s.t.groups["fanout"]["deliveries"]; c != nil {
		r.Deliveries = rateOf("deliveries", c, d)
	}
	for n := 0; n < s.sc.Shape.Communities; n++ {
		cl := ChannelLoad{Community: n, Events: rateOf("messages", &s.commEvents[n], d),
			Deliveries: rateOf("deliveries", &s.commDeliveries[n], d)}
		if cl.Events.Count > 0 {
			cl.FanOut = cl.Deliveries.Count / cl.Events.Count
		}
		r.Communities = append(r.Communities, cl)
	}
	big := -1
	for i := range s.channels {
		if big < 0 || s.chanSize[i] > s.chanSize[big] {
			big = i
		}
	}
	if big >= 0 {
		per := s.sc.Shape.ChannelsPerCommunity
		c := &s.channels[big]
		cl := ChannelLoad{Community: big / per, Channel: big % per, Members: int(s.chanSize[big]),
			Events: rateOf("messages", &c.events, d), Deliveries: rateOf("deliveries", &c.deliveries, d)}
		if cl.Events.Count > 0 {
			cl.FanOut = cl.Deliveries.Count / cl.Events.Count
		}
		r.Largest = cl
	}
}
