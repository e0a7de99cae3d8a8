package report

import (
	"sync"

	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// Expected errors (issue 26): an error matching one of the scenario's
// [[expect]] rules (or buzz.load's expect option) is known capacity
// semantics of the deployment. It is counted apart, as OutcomeExpected:
// no buzz_op_failed sample (so no error rate and no abort rule sees it),
// a buzz_op_expected sample instead, and per rule in the report.

// OutcomeExpected is the outcome the sinks give an error a rule matched.
// Only the extension's aggregation sees it.
const OutcomeExpected relayclient.Outcome = 100

// maxExpectedSamples bounds the error texts kept per rule.
const maxExpectedSamples = 3

// ExpectedTally counts the matches of each rule, by op, with a few texts.
type ExpectedTally struct {
	set *expect.Set
	mu  sync.Mutex
	per []expectedRule
}

type expectedRule struct {
	count   int64
	ops     map[string]int64
	samples []string
}

func NewExpectedTally(set *expect.Set) *ExpectedTally {
	return &ExpectedTally{set: set, per: make([]expectedRule, set.Len())}
}

// Classify turns an error a rule matches into OutcomeExpected and counts it.
func (t *ExpectedTally) Classify(r *relayclient.Result) {
	if t == nil || r.Outcome != relayclient.OutcomeError {
		return
	}
	i := t.set.Match(r.Op, r.Error)
	if i < 0 {
		return
	}
	r.Outcome = OutcomeExpected
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

// Reports are the rules with what each matched.
func (t *ExpectedTally) Reports() []ExpectedReport {
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
