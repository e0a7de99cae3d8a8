package capacity

import (
	"bytes"
	"fmt"
	"math"

	"github.com/BurntSushi/toml"

	"github.com/buzzload/buzzload/modules/scenario"
)

// People is a population of a probe: humans and agents.
type People struct{ Humans, Agents int }

// Scale is the scenario's population scaled to users people in its
// proportions, rounded to whole people, at least one of each kind the
// file has (so a probe never has fewer people than kinds).
func Scale(pop scenario.Population, users int) People {
	h, a := pop.Humans, pop.Agents
	kinds := 0
	if h > 0 {
		kinds++
	}
	if a > 0 {
		kinds++
	}
	users = max(users, kinds)
	if h+a == 0 {
		return People{}
	}
	humans := int(math.Round(float64(users) * float64(h) / float64(h+a)))
	if h > 0 {
		humans = max(humans, 1)
	}
	if a > 0 {
		humans = min(humans, users-1)
	}
	return People{Humans: humans, Agents: users - humans}
}

// MinUsers is the fewest people a probe of pop can have.
func MinUsers(pop scenario.Population) int {
	return Scale(pop, 0).Humans + Scale(pop, 0).Agents
}

// Target is where a probe's clients go when the scenario names no relay
// (the relay the search started for it).
type Target struct {
	WSURL, HTTPURL, ConnectAddr, HostTemplate, OperatorKeyEnv string
}

// Phases are a probe's timing ([capacity]).
type Phases struct{ RampSecs, SettleSecs, ProbeSecs float64 }

// ProbeTOML is the scenario file src rewritten for one probe of users
// people: [population] scaled, one ramp step (ramp, then settle and probe
// held), the ramp and settling as the warm-up (not judged), its drills and
// [capacity] left out, and aimed at t when set. Every other key is the
// file's, as written.
func ProbeTOML(src []byte, pop scenario.Population, users int, ph Phases, t *Target) ([]byte, error) {
	var doc map[string]any
	if _, err := toml.Decode(string(src), &doc); err != nil {
		return nil, err
	}
	p := Scale(pop, users)
	popT, _ := doc["population"].(map[string]any)
	if popT == nil {
		popT = map[string]any{}
	}
	popT["humans"], popT["agents"] = p.Humans, p.Agents
	doc["population"] = popT
	doc["ramp"] = []map[string]any{{"users": 1, "ramp_secs": ph.RampSecs, "hold_secs": ph.SettleSecs + ph.ProbeSecs}}
	abort, _ := doc["abort"].(map[string]any)
	if abort == nil {
		abort = map[string]any{}
	}
	abort["warmup_secs"] = ph.RampSecs + ph.SettleSecs
	doc["abort"] = abort
	delete(doc, "drill")
	delete(doc, "capacity")
	if t != nil {
		tgt, _ := doc["target"].(map[string]any)
		if tgt == nil {
			tgt = map[string]any{}
		}
		tgt["ws_url"], tgt["http_url"], tgt["connect_addr"] = t.WSURL, t.HTTPURL, t.ConnectAddr
		tgt["community_host_template"], tgt["operator_key_env"] = t.HostTemplate, t.OperatorKeyEnv
		doc["target"] = tgt
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# A probe of buzzload capacity: %d people (%d humans, %d agents).\n", p.Humans+p.Agents, p.Humans, p.Agents)
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
