package extension

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
	"github.com/buzzload/buzzload/modules/seed"
)

// knownOps are the operations a run of sc can record: every population's,
// the seed's and teardown's, and the low-level API's defaults.
func knownOps(sc *scenario.Scenario) []string {
	set := map[string]bool{}
	for k := scenario.Kind(0); k < scenario.NumKinds; k++ {
		for _, op := range k6options.OpsOf(k) {
			set[op] = true
		}
	}
	for _, op := range []string{seed.OpProvision, seed.OpList, seed.OpChannel, seed.OpMembers, seed.OpRelayMembers,
		seed.OpNIP11, seed.OpState, seed.OpHistory, seed.OpThread, seed.OpHot, seed.OpArchive, seed.OpDelete,
		seed.OpOwnerList, relayclient.OpHTTPQuery, relayclient.OpHTTPEvents, relayclient.OpHTTPCount} {
		set[op] = true
	}
	return report.SortedOps(set)
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

// parseDrillsOption reads buzz.load's drills option: [[drill]] entries as
// plain objects with the file's keys (at_secs, kind, duration_secs, …);
// unknown fields are errors.
func parseDrillsOption(v any) ([]scenario.Drill, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("option drills: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var ds []scenario.Drill
	if err := dec.Decode(&ds); err != nil {
		return nil, fmt.Errorf("option drills: want an array of {at_secs, kind, duration_secs, jitter_secs, delay_ms, command, timeout_secs}: %w", err)
	}
	return ds, nil
}
