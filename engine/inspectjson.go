package engine

import (
	"bytes"
	"encoding/json"
	"sort"
)

// k6's inspect prints its whole options struct in the struct's order, an
// unset option as null (observed on k6 v1.8.1, issue 28 item 4, and on
// k6 v2.2.0, which added handleSummaryTimeout and features, issue 46):
// these are its keys in that order, and each executor's after the common
// ones.
var k6OptionOrder = []string{"paused", "vus", "duration", "iterations", "stages", "scenarios", "executionSegment",
	"executionSegmentSequence", "noSetup", "setupTimeout", "noTeardown", "teardownTimeout", "handleSummaryTimeout", "rps", "dns", "maxRedirects",
	"userAgent", "batch", "batchPerHost", "httpDebug", "insecureSkipTLSVerify", "tlsCipherSuites", "tlsVersion", "tlsAuth",
	"throw", "thresholds", "blacklistIPs", "blockHostnames", "hosts", "noConnectionReuse", "noVUConnectionReuse",
	"minIterationDuration", "ext", "summaryTrendStats", "summaryTimeUnit", "systemTags", "tags", "metricSamplesBufferSize",
	"noCookiesReset", "discardResponseBodies", "features"}

var k6ScenarioCommon = []string{"executor", "startTime", "gracefulStop", "env", "exec", "tags"}

var k6ExecutorOrder = map[string][]string{
	"shared-iterations":     {"vus", "iterations", "maxDuration"},
	"per-vu-iterations":     {"vus", "iterations", "maxDuration"},
	"constant-vus":          {"vus", "duration"},
	"ramping-vus":           {"startVUs", "stages", "gracefulRampDown"},
	"constant-arrival-rate": {"rate", "timeUnit", "duration", "preAllocatedVUs", "maxVUs"},
	"ramping-arrival-rate":  {"startRate", "timeUnit", "stages", "preAllocatedVUs", "maxVUs"},
}

// orderedJSON writes m with the keys of order first (null when absent, dns
// as k6's object of nulls), then any other keys sorted, then tail's.
func orderedJSON(m map[string]json.RawMessage, order []string, tail [][2]any, indent string) []byte {
	var b bytes.Buffer
	b.WriteString("{")
	first := true
	put := func(k string, v []byte) {
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString("\n" + indent + "  ")
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(": ")
		b.Write(v)
	}
	seen := map[string]bool{}
	for _, k := range order {
		seen[k] = true
		v, ok := m[k]
		switch {
		case k == "dns" && (!ok || string(v) == "null"):
			v = []byte("{\n" + indent + "    \"ttl\": null,\n" + indent + "    \"select\": null,\n" + indent + "    \"policy\": null\n" + indent + "  }")
		case !ok:
			v = []byte("null")
		default:
			v = reindent(v, indent+"  ")
		}
		put(k, v)
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		put(k, reindent(m[k], indent+"  "))
	}
	for _, kv := range tail {
		v, _ := json.Marshal(kv[1])
		put(kv[0].(string), v)
	}
	b.WriteString("\n" + indent + "}")
	return b.Bytes()
}

func reindent(v json.RawMessage, prefix string) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, v, prefix, "  "); err != nil {
		return v
	}
	return b.Bytes()
}

// k6Inspect is m (the consolidated options) in k6's form.
func k6Inspect(m map[string]any, tail [][2]any) ([]byte, error) {
	raw := map[string]json.RawMessage{}
	for k, v := range m {
		if k == "scenarios" {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw[k] = b
	}
	if sc, ok := m["scenarios"].(map[string]any); ok {
		names := make([]string, 0, len(sc))
		for n := range sc {
			names = append(names, n)
		}
		sort.Strings(names)
		var b bytes.Buffer
		b.WriteString("{")
		for i, n := range names {
			if i > 0 {
				b.WriteString(",")
			}
			nb, _ := json.Marshal(n)
			b.WriteString("\n    ")
			b.Write(nb)
			b.WriteString(": ")
			fields := map[string]json.RawMessage{}
			s, _ := sc[n].(map[string]any)
			for k, v := range s {
				fb, err := json.Marshal(v)
				if err != nil {
					return nil, err
				}
				fields[k] = fb
			}
			ex, _ := s["executor"].(string)
			b.Write(orderedJSON(fields, append(append([]string(nil), k6ScenarioCommon...), k6ExecutorOrder[ex]...), nil, "    "))
		}
		b.WriteString("\n  }")
		raw["scenarios"] = b.Bytes()
	}
	return orderedJSON(raw, k6OptionOrder, tail, ""), nil
}
