package scenario

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

const rampShape = `run_id = "t"
[population]
humans = 10
agents = 2
channels_per_member = 1
[desktop]
fraction = 0.3
[hot_thread]
authors = 1
[[ramp]]
users = 1
ramp_secs = 10
hold_secs = 20
[[ramp]]
users = 2
ramp_secs = 5
hold_secs = 0
[[ramp]]
users = 2
ramp_secs = 0
hold_secs = 600
[[ramp]]
users = 3.5
ramp_secs = 30
hold_secs = 60
`

func TestRampSteps(t *testing.T) {
	s := mustParse(t, rampShape)
	sec := time.Second
	want := []StepPlan{
		{Index: 0, Users: 1, Start: 0, RampEnd: 10 * sec, End: 30 * sec, Clients: Counts{8, 2, 2, 1}},
		{Index: 1, Users: 2, Start: 30 * sec, RampEnd: 35 * sec, End: 35 * sec, Clients: Counts{15, 5, 4, 2}},
		{Index: 2, Users: 2, Start: 35 * sec, RampEnd: 35 * sec, End: 635 * sec, Clients: Counts{15, 5, 4, 2}},
		// 3.5 × (10, 2, 1) rounds to 35, 7, 4 (3.5 rounds half up); the
		// desktop draw picks 2 of the first 10 humans, 9 of the first 35.
		{Index: 3, Users: 3.5, Start: 635 * sec, RampEnd: 665 * sec, End: 725 * sec, Clients: Counts{26, 9, 7, 4}},
	}
	got := s.Steps()
	if !slices.Equal(got, want) {
		t.Errorf("Steps() =\n%+v\nwant\n%+v", got, want)
	}
	if d := s.Duration(); d != 725*sec {
		t.Errorf("Duration = %v, want 12m5s", d)
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {29 * sec, 0}, {30 * sec, 1}, {35 * sec, 2}, {634 * sec, 2}, {635 * sec, 3}, {725 * sec, -1}, {-sec, -1}} {
		if got := s.StepAt(c.at); got != c.want {
			t.Errorf("StepAt(%v) = %d, want %d", c.at, got, c.want)
		}
	}
}

// dt is a stage's duration and target.
type dt struct {
	d time.Duration
	n int
}

// A step is its ramp and its hold: two ramping-vus stages per step, the
// target being the kind's client count at that step.
func TestRampBecomesStages(t *testing.T) {
	s := mustParse(t, rampShape)
	sec := time.Second
	cases := []struct {
		kind Kind
		want []dt
	}{
		{KindAgent, []dt{{10 * sec, 2}, {20 * sec, 2}, {5 * sec, 4}, {0, 4}, {0, 4}, {600 * sec, 4}, {30 * sec, 7}, {60 * sec, 7}}},
		{KindHotAuthor, []dt{{10 * sec, 1}, {20 * sec, 1}, {5 * sec, 2}, {0, 2}, {0, 2}, {600 * sec, 2}, {30 * sec, 4}, {60 * sec, 4}}},
		{KindDesktop, []dt{{10 * sec, 2}, {20 * sec, 2}, {5 * sec, 5}, {0, 5}, {0, 5}, {600 * sec, 5}, {30 * sec, 9}, {60 * sec, 9}}},
		{KindHuman, []dt{{10 * sec, 8}, {20 * sec, 8}, {5 * sec, 15}, {0, 15}, {0, 15}, {600 * sec, 15}, {30 * sec, 26}, {60 * sec, 26}}},
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			want := make([]Stage, len(c.want))
			for j, w := range c.want {
				// Both stages of step j/2 carry its name: one threshold window.
				want[j] = Stage{Duration: w.d, Target: w.n, Name: fmt.Sprintf("step-%d", j/2)}
			}
			if got := s.Stages(c.kind, Shard{}); !slices.Equal(got, want) {
				t.Errorf("Stages = %v, want %v", got, want)
			}
		})
	}
}

// Shards split every kind's clients exactly: their stage targets add up to
// the whole run's, and Clients lists what the counts count.
func TestShardsPartitionTheClients(t *testing.T) {
	s := mustParse(t, rampShape)
	const n = 4
	for k := Kind(0); k < NumKinds; k++ {
		whole := s.Stages(k, Shard{})
		sum := make([]int, len(whole))
		var all []int
		for i := 0; i < n; i++ {
			sh := Shard{Index: i, Count: n}
			for j, st := range s.Stages(k, sh) {
				sum[j] += st.Target
			}
			cl := s.Clients(k, s.PeakUsers(), sh)
			if len(cl) != s.CountsAt(s.PeakUsers(), sh)[k] {
				t.Errorf("%v shard %d: Clients lists %d, CountsAt says %d", k, i, len(cl), s.CountsAt(s.PeakUsers(), sh)[k])
			}
			for _, g := range cl {
				if c, _ := s.Client(g); c.Kind != k {
					t.Errorf("%v: Clients lists g=%d of kind %v", k, g, c.Kind)
				}
			}
			all = append(all, cl...)
		}
		for j := range whole {
			if sum[j] != whole[j].Target {
				t.Errorf("%v stage %d: shards add to %d, whole run %d", k, j, sum[j], whole[j].Target)
			}
		}
		slices.Sort(all)
		if whole := s.Clients(k, s.PeakUsers(), Shard{}); !slices.Equal(all, whole) {
			t.Errorf("%v: shards list %v, whole run %v", k, all, whole)
		}
	}
}

// Every kind is split evenly over the shards at every step (counts differ
// by at most one), and at the peak so are the totals. The second shape is
// the one where buzz-loadgen's g % n put both agents on one shard and both
// hot-thread authors on the other (a block of 4 clients, 2 shards).
func TestShardsSplitEveryKindEvenly(t *testing.T) {
	small := `run_id = "t"
[population]
humans = 2
agents = 1
channels_per_member = 1
[hot_thread]
authors = 1
[[ramp]]
users = 1
ramp_secs = 1
hold_secs = 1
[[ramp]]
users = 2
ramp_secs = 1
hold_secs = 1
`
	for name, src := range map[string]string{"rampShape": rampShape, "small": small} {
		s := mustParse(t, src)
		for _, n := range []int{2, 3, 4, 7} {
			for _, st := range s.Ramp {
				var lo, hi Counts
				for i := 0; i < n; i++ {
					c := s.CountsAt(st.Users, Shard{Index: i, Count: n})
					for k := range c {
						if i == 0 || c[k] < lo[k] {
							lo[k] = c[k]
						}
						hi[k] = max(hi[k], c[k])
					}
				}
				for k := Kind(0); k < NumKinds; k++ {
					if hi[k]-lo[k] > 1 {
						t.Errorf("%s, %d shards, users %g: %v split %d..%d", name, n, st.Users, k, lo[k], hi[k])
					}
				}
			}
			lo, hi := -1, 0
			for i := 0; i < n; i++ {
				tot := s.CountsAt(s.PeakUsers(), Shard{Index: i, Count: n}).Total()
				if lo < 0 || tot < lo {
					lo = tot
				}
				hi = max(hi, tot)
			}
			if hi-lo > 1 {
				t.Errorf("%s, %d shards: peak totals %d..%d", name, n, lo, hi)
			}
		}
	}
	s := mustParse(t, small)
	for i := 0; i < 2; i++ {
		c := s.CountsAt(2, Shard{Index: i, Count: 2})
		if c[KindAgent] != 1 || c[KindHotAuthor] != 1 || c[KindHuman] != 2 {
			t.Errorf("shard %d/2 at 2 users: %v, want 2 humans, 1 agent, 1 hot-thread author", i, c)
		}
	}
}

// The global layout: every index is one client, GlobalIndex inverts Client,
// and a client's index does not depend on the ramp.
func TestGlobalIndexLayout(t *testing.T) {
	s := mustParse(t, rampShape)
	type id struct {
		role  string
		index int
	}
	seen := map[id]bool{}
	for g := 0; g < 13*4; g++ {
		c, ok := s.Client(g)
		if !ok {
			t.Fatalf("Client(%d) not ok", g)
		}
		if back := s.GlobalIndex(c.Kind, c.Index); back != g {
			t.Fatalf("GlobalIndex(Client(%d)) = %d", g, back)
		}
		key := id{string(c.Kind.Role()), c.Index}
		if seen[key] {
			t.Fatalf("g=%d repeats %v index %d", g, c.Kind, c.Index)
		}
		seen[key] = true
	}
	// 10 humans, 2 agents, 1 author per unit: g=12 is author 0, g=13 human 10.
	if c, _ := s.Client(12); c.Kind != KindHotAuthor || c.Index != 0 || c.Community != 0 {
		t.Errorf("Client(12) = %+v", c)
	}
	if c, _ := s.Client(13); !c.Kind.IsHuman() || c.Index != 10 {
		t.Errorf("Client(13) = %+v", c)
	}
	if _, ok := s.Client(-1); ok {
		t.Error("Client(-1) ok")
	}
	if !s.Active(13, 2) || s.Active(13, 1) {
		t.Error("human 10 must run from 2x users on")
	}
}

func TestAbortRulesAsData(t *testing.T) {
	s := mustParse(t, scenarioSrc("[abort]\nmax_p99_ms = 750\nmax_error_rate = 0.05"))
	rules := s.Abort.Rules()
	want := []struct {
		name, metric, threshold string
		perOp                   bool
		deliver                 bool
	}{
		{"p99", "buzz_op_duration", "p(99)<=750", true, true},
		{"error_rate", "buzz_op_failed", "rate<=0.05", true, false},
		{"client_exits", "buzz_client_exits", "count<=0", false, true},
	}
	if len(rules) != len(want) {
		t.Fatalf("%d rules, want %d", len(rules), len(want))
	}
	for i, w := range want {
		r := rules[i]
		if r.Name != w.name || r.Metric != w.metric || r.Threshold() != w.threshold || r.PerOp != w.perOp || r.Covers("deliver") != w.deliver || !r.Covers("publish") {
			t.Errorf("rule %d = %+v (threshold %q), want %+v", i, r, r.Threshold(), w)
		}
	}
}

func TestStagesMarshalAsK6Options(t *testing.T) {
	b, err := json.Marshal([]Stage{{90 * time.Second, 5, "step-0"}, {0, 0, ""}, {1500 * time.Millisecond, 2, `a"b`}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"duration":"1m30s","target":5,"name":"step-0"},{"duration":"0s","target":0},{"duration":"1.5s","target":2,"name":"a\"b"}]`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

func TestValidateInMemoryScenario(t *testing.T) {
	s := Defaults()
	err := s.Validate()
	if err == nil || !containsLine(err.Error(), "scenario: run_id: is required") || !containsLine(err.Error(), "scenario: ramp: needs at least one [[ramp]] step") {
		t.Errorf("Validate of bare defaults: %v", err)
	}
	s.RunID = "x"
	s.Ramp = []Step{{Users: 1, HoldSecs: 1}}
	if err := s.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// With several humans per VU the humans' stages are VUs, each step's count
// rounded up; other kinds keep one VU each. Fails with the counts as
// targets (7 and 14 humans would start 7 and 14 VUs of 3 humans each).
func TestStagesCountVUsOfSeveralHumans(t *testing.T) {
	s := Defaults()
	s.RunID = "x"
	s.Population.Humans, s.Population.Agents, s.Population.HumansPerVU = 7, 2, 3
	s.Ramp = []Step{{Users: 1, RampSecs: 1, HoldSecs: 1}, {Users: 2, RampSecs: 1, HoldSecs: 1}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	var humans, agents []int
	for _, st := range s.Stages(KindHuman, Shard{}) {
		humans = append(humans, st.Target)
	}
	for _, st := range s.Stages(KindAgent, Shard{}) {
		agents = append(agents, st.Target)
	}
	if fmt.Sprint(humans) != "[3 3 5 5]" || fmt.Sprint(agents) != "[2 2 4 4]" {
		t.Errorf("human VUs %v (want [3 3 5 5]: 7 and 14 humans, 3 a VU), agent VUs %v (want [2 2 4 4])", humans, agents)
	}
}
