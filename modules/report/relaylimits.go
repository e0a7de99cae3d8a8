package report

import (
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/modules/scenario"
)

// RelayLimit is one bound the run's clients work within, with where its
// value came from: the relay's NIP-11 limitation when it advertises it,
// else Buzz's default (docs/buzz-protocol.md §0, §1.3).
type RelayLimit struct {
	Name   string `json:"name"`
	Value  int    `json:"value"`
	Source string `json:"source"` // "NIP-11" or "Buzz default"
}

// NIP11Limitation is the part of a NIP-11 document the limits come from.
type NIP11Limitation struct {
	Limitation struct {
		MaxLimit         int `json:"max_limit"`
		MaxFilters       int `json:"max_filters"`
		MaxSubscriptions int `json:"max_subscriptions"`
		MaxMessageLength int `json:"max_message_length"`
	} `json:"limitation"`
}

// BuzzPageClamp is the most events Buzz returns for one filter, whatever
// its NIP-11 advertises (docs/buzz-protocol.md).
const BuzzPageClamp = 1000

// RelayLimitsOf is the table of bounds in force for a relay whose NIP-11
// document is doc. Buzz does not advertise its WebSocket admission or its
// cap on #h values per REQ, so those are always its defaults.
func RelayLimitsOf(doc NIP11Limitation) []RelayLimit {
	pick := func(name string, advertised, def int) RelayLimit {
		if advertised > 0 {
			return RelayLimit{Name: name, Value: advertised, Source: "NIP-11"}
		}
		return RelayLimit{Name: name, Value: def, Source: "Buzz default"}
	}
	l := doc.Limitation
	page := pick("events per page (max_limit)", l.MaxLimit, BuzzPageClamp)
	if l.MaxLimit > BuzzPageClamp {
		// Some Buzz versions advertise 10000 and clamp at 1000 (issue 41
		// item 8): an advertised page above the clamp is not trusted.
		page = RelayLimit{Name: page.Name, Value: BuzzPageClamp, Source: fmt.Sprintf("NIP-11 advertises %d; Buzz clamps a page at %d", l.MaxLimit, BuzzPageClamp)}
	}
	return []RelayLimit{
		page,
		pick("filters per REQ (max_filters)", l.MaxFilters, 10),
		pick("subscriptions per connection (max_subscriptions)", l.MaxSubscriptions, scenario.MaxSubscriptions),
		pick("frame bytes (max_message_length)", l.MaxMessageLength, 524288),
		{Name: fmt.Sprintf("WebSocket frames per %d s per key", scenario.WSAdmissionWindowSecs), Value: scenario.WSAdmissionFrames, Source: "Buzz default"},
		{Name: "#h values per REQ", Value: scenario.MaxChannelValuesPerREQ, Source: "Buzz default"},
	}
}

// RelayLimitWarnings says where the scenario asks for more than the relay
// gives, so a result is not read as the scenario's shape.
func RelayLimitWarnings(sc *scenario.Scenario, limits []RelayLimit) []string {
	var w []string
	for _, l := range limits {
		if strings.HasPrefix(l.Name, "events per page") && sc.Human.HistoryLimit > l.Value {
			w = append(w, fmt.Sprintf("%s: human.history_limit %d is above the relay's %d events per page (%s): history reads return at most %d",
				sc.File, sc.Human.HistoryLimit, l.Value, l.Source, l.Value))
		}
	}
	return w
}

// limitsLine is the report header's line of the bounds in force.
func limitsLine(limits []RelayLimit) string {
	parts := make([]string, len(limits))
	for i, l := range limits {
		parts[i] = fmt.Sprintf("%s %d (%s)", l.Name, l.Value, l.Source)
	}
	return "  relay limits in force: " + strings.Join(parts, ", ") + "\n"
}
