// Package expect matches expected errors: refusals a deployment gives by
// design (a quota, a cap, a policy), declared by the scenario's [[expect]]
// rules or a script's, so that a run counts them apart instead of as
// failures (issue 26; the soak tool's expected-error whitelist,
// ../shared/seeds/soak-tool-load_test.zh.md §4). A rule names an operation
// (a name or a glob), optionally the error text (a prefix or a regular
// expression), and a level: "warn" counts the matches and warns when any
// happened, "ignore" only counts them.
package expect

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Levels of a rule.
const (
	LevelWarn   = "warn"
	LevelIgnore = "ignore"
)

// Rule is one expected error, as written in a scenario ([[expect]]) or a
// script (buzz.load's expect option).
type Rule struct {
	Op    string `toml:"op" json:"op"`                 // operation name or glob (path.Match: *, ?, [...])
	Text  string `toml:"text" json:"text,omitempty"`   // the error text starts with this
	Regex string `toml:"regex" json:"regex,omitempty"` // or matches this (RE2)
	Level string `toml:"level" json:"level"`           // warn (default) or ignore
}

// String names the rule for reports: op, then the text it matches.
func (r Rule) String() string {
	s := r.Op
	switch {
	case r.Text != "":
		s += " " + fmt.Sprintf("%q…", r.Text)
	case r.Regex != "":
		s += " /" + r.Regex + "/"
	}
	return s
}

// Problem is one invalid field of a rule: Key is its path (expect[2].regex).
type Problem struct {
	Key, Msg string
}

// Check validates rules without knowing the operations: a level, an op that
// is a valid glob, at most one of text and regex, a regex that compiles.
// Keys are prefix[i].field.
func Check(prefix string, rules []Rule) []Problem {
	var out []Problem
	for i, r := range rules {
		key := func(f string) string { return fmt.Sprintf("%s[%d].%s", prefix, i, f) }
		if r.Op == "" {
			out = append(out, Problem{key("op"), "is required (an operation name or glob, e.g. \"publish\" or \"desktop_*\")"})
		} else if _, err := path.Match(r.Op, ""); err != nil {
			out = append(out, Problem{key("op"), fmt.Sprintf("%q is not a valid glob: %v", r.Op, err)})
		}
		switch r.Level {
		case "", LevelWarn, LevelIgnore:
		default:
			out = append(out, Problem{key("level"), fmt.Sprintf("must be %q or %q, got %q", LevelWarn, LevelIgnore, r.Level)})
		}
		if r.Text != "" && r.Regex != "" {
			out = append(out, Problem{key("regex"), "give text (a prefix) or regex, not both"})
		}
		if r.Regex != "" {
			if _, err := regexp.Compile(r.Regex); err != nil {
				out = append(out, Problem{key("regex"), fmt.Sprintf("invalid regular expression: %v", err)})
			}
		}
	}
	return out
}

// Unknown lists the rules whose op matches none of ops (names the run can
// record): a typo would otherwise never match and hide nothing.
func Unknown(prefix string, rules []Rule, ops []string) []Problem {
	var out []Problem
	for i, r := range rules {
		hit := false
		for _, op := range ops {
			if ok, _ := path.Match(r.Op, op); ok {
				hit = true
				break
			}
		}
		if !hit {
			out = append(out, Problem{fmt.Sprintf("%s[%d].op", prefix, i), fmt.Sprintf("%q matches no operation this run records (%s)", r.Op, strings.Join(ops, ", "))})
		}
	}
	return out
}

// Set is a compiled list of rules; the zero Set matches nothing.
type Set struct {
	rules []Rule
	res   []*regexp.Regexp
}

// Compile compiles rules (Check them first: an invalid one is an error).
func Compile(rules []Rule) (*Set, error) {
	if p := Check("expect", rules); len(p) > 0 {
		return nil, fmt.Errorf("%s %s", p[0].Key, p[0].Msg)
	}
	s := &Set{rules: append([]Rule(nil), rules...), res: make([]*regexp.Regexp, len(rules))}
	for i := range s.rules {
		if s.rules[i].Level == "" {
			s.rules[i].Level = LevelWarn
		}
		if s.rules[i].Regex != "" {
			s.res[i] = regexp.MustCompile(s.rules[i].Regex)
		}
	}
	return s, nil
}

// Len is the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Rule is rule i, its level defaulted.
func (s *Set) Rule(i int) Rule { return s.rules[i] }

// Match is the index of the first rule op's error text matches, or -1.
func (s *Set) Match(op, text string) int {
	if s == nil {
		return -1
	}
	for i, r := range s.rules {
		if ok, _ := path.Match(r.Op, op); !ok {
			continue
		}
		switch {
		case r.Text != "" && !strings.HasPrefix(text, r.Text):
			continue
		case s.res[i] != nil && !s.res[i].MatchString(text):
			continue
		}
		return i
	}
	return -1
}
