package extension

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// Expected errors (issue 26): an error matching one of the scenario's
// [[expect]] rules (or buzz.load's expect option) is known capacity
// semantics of the deployment. It is counted apart, as outcomeExpected:
// no buzz_op_failed sample (so no error rate and no abort rule sees it),
// a buzz_op_expected sample instead, and per rule in the report.

// outcomeExpected is the outcome the sinks give an error a rule matched.
// Only the extension's aggregation sees it.
const outcomeExpected relayclient.Outcome = 100

// maxExpectedSamples bounds the error texts kept per rule.
const maxExpectedSamples = 3

// expectedTally counts the matches of each rule, by op, with a few texts.
type expectedTally struct {
	set *expect.Set
	mu  sync.Mutex
	per []expectedRule
}

type expectedRule struct {
	count   int64
	ops     map[string]int64
	samples []string
}

func newExpectedTally(set *expect.Set) *expectedTally {
	return &expectedTally{set: set, per: make([]expectedRule, set.Len())}
}

// classify turns an error a rule matches into outcomeExpected and counts it.
func (t *expectedTally) classify(r *relayclient.Result) {
	if t == nil || r.Outcome != relayclient.OutcomeError {
		return
	}
	i := t.set.Match(r.Op, r.Error)
	if i < 0 {
		return
	}
	r.Outcome = outcomeExpected
	t.mu.Lock()
	e := &t.per[i]
	e.count++
	if e.ops == nil {
		e.ops = map[string]int64{}
	}
	e.ops[r.Op]++
	if len(e.samples) < maxExpectedSamples {
		e.samples = append(e.samples, r.Error) // relayclient bounds every error text
	}
	t.mu.Unlock()
}

// ExpectedReport is one [[expect]] rule and what it matched.
type ExpectedReport struct {
	Rule    string           `json:"rule"`
	Op      string           `json:"op"`
	Text    string           `json:"text,omitempty"`
	Regex   string           `json:"regex,omitempty"`
	Level   string           `json:"level"`
	Count   int64            `json:"count"`
	Ops     map[string]int64 `json:"ops,omitempty"`
	Samples []string         `json:"samples,omitempty"`
}

func (t *expectedTally) report() []ExpectedReport {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ExpectedReport, len(t.per))
	for i, e := range t.per {
		r := t.set.Rule(i)
		ops := make(map[string]int64, len(e.ops))
		for k, v := range e.ops {
			ops[k] = v
		}
		out[i] = ExpectedReport{Rule: r.String(), Op: r.Op, Text: r.Text, Regex: r.Regex, Level: r.Level,
			Count: e.count, Ops: ops, Samples: append([]string(nil), e.samples...)}
	}
	return out
}

// knownOps are the operations a run of sc can record: every population's,
// the seed's and teardown's, and the low-level API's defaults.
func knownOps(sc *scenario.Scenario) []string {
	set := map[string]bool{}
	for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
		for _, op := range OpsOf(k) {
			set[op] = true
		}
	}
	for _, op := range []string{seed.OpProvision, seed.OpList, seed.OpChannel, seed.OpMembers, seed.OpRelayMembers,
		seed.OpNIP11, seed.OpState, seed.OpHistory, seed.OpThread, seed.OpHot, seed.OpArchive, seed.OpDelete,
		seed.OpOwnerList, relayclient.OpHTTPQuery, relayclient.OpHTTPEvents, relayclient.OpHTTPCount} {
		set[op] = true
	}
	return sortedOps(set)
}

// expectRules checks and compiles sc's rules plus the script's (from
// buzz.load's expect option), naming the key of each bad one.
func expectRules(sc *scenario.Scenario, script []expect.Rule) (*expect.Set, error) {
	probs := expect.Check("buzz.load expect", script)
	rules := append(append([]expect.Rule(nil), sc.Expect...), script...)
	if len(probs) == 0 {
		// The file's rules name built-in operations; a script's may name
		// the ops its own low-level calls record ({op: "greet_post"}).
		probs = expect.Unknown("expect", sc.Expect, knownOps(sc))
	}
	if len(probs) > 0 {
		// A scenario problem like any other: invalid configuration, one a
		// line, each with its file and key.
		e := &scenario.Error{File: sc.File}
		for _, p := range probs {
			e.Problems = append(e.Problems, scenario.Problem{Key: p.Key, Reason: p.Msg})
		}
		return nil, e
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return expect.Compile(rules)
}

// parseExpectOption reads buzz.load's expect option (an array of rules as
// plain objects); unknown fields are errors.
func parseExpectOption(v any) ([]expect.Rule, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("option expect: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var rules []expect.Rule
	if err := dec.Decode(&rules); err != nil {
		return nil, fmt.Errorf("option expect: want an array of {op, text, regex, level}: %w", err)
	}
	return rules, nil
}
