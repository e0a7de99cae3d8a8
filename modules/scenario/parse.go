package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// ProblemKind says what sort of problem a Problem is.
type ProblemKind int

// The kinds of problem a scenario file can have.
const (
	ProblemInvalid ProblemKind = iota // a value breaks a rule
	ProblemUnknown                    // a key the scenario model does not have
	ProblemType                       // a value of the wrong TOML type
	ProblemSyntax                     // the file is not TOML
)

// Problem is one thing wrong with a scenario file. Key is the key path with
// array indices (population.tiers[1].fraction); Line is 0 when unknown.
// Messages never contain string values, so a secret pasted into the wrong key
// is not echoed.
type Problem struct {
	Kind   ProblemKind
	Key    string
	Line   int
	Reason string
}

// Error is every problem found in one scenario file.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	file := e.File
	if file == "" {
		file = "scenario"
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.format(file)
	}
	return strings.Join(lines, "\n")
}

func (p Problem) format(file string) string {
	where := file
	if p.Line > 0 {
		where += ":" + strconv.Itoa(p.Line)
	}
	switch {
	case p.Kind == ProblemUnknown:
		s := where + ": unknown key " + p.Key
		if p.Reason != "" {
			s += " (" + p.Reason + ")"
		}
		return s
	case p.Key == "":
		return where + ": " + p.Reason
	default:
		return where + ": " + p.Key + ": " + p.Reason
	}
}

// Load reads and parses a scenario file. Relative paths inside it (the
// operator key file) are resolved against the file's directory by the
// functions that use them.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse parses and validates a scenario. name is used in messages and as
// Scenario.File. On failure the error is an *Error listing every problem
// found, not just the first.
func Parse(name string, data []byte) (*Scenario, error) {
	// Bounded before the decoder sees it: deeply nested inline tables made
	// it grow memory far faster than the file (12 KB → 246 MB, 120 KB → out
	// of memory; issue 43 M1).
	if p := checkShape(data); p != nil {
		return nil, &Error{File: name, Problems: []Problem{*p}}
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, &Error{File: name, Problems: []Problem{syntaxProblem(err)}}
	}
	var probs []Problem
	checkTable(raw, reflect.TypeFor[Scenario](), "", &probs)

	// Decode over the defaults, so absent keys keep them. Strictness comes
	// from checkTable, which also catches the case-insensitive matches the
	// decoder would accept.
	s := Defaults()
	if _, err := toml.Decode(string(data), &s); err != nil {
		// The schema walk has already reported the bad value with its indexed
		// path; the decoder adds the line of the first one.
		line, key := decoderWhere(err)
		attached := false
		for i := range probs {
			if probs[i].Kind == ProblemType && unindexed(probs[i].Key) == key && probs[i].Line == 0 {
				probs[i].Line = line
				attached = true
				break
			}
		}
		if !attached {
			probs = append(probs, Problem{Kind: ProblemType, Key: key, Line: line, Reason: decoderReason(err)})
		}
	}
	if len(probs) > 0 {
		return nil, &Error{File: name, Problems: probs}
	}
	s.File = name
	if probs := s.validate(); len(probs) > 0 {
		return nil, &Error{File: name, Problems: probs}
	}
	return &s, nil
}

// Validate checks an in-memory scenario (one built in Go rather than parsed)
// by the same rules Parse applies.
func (s *Scenario) Validate() error {
	if probs := s.validate(); len(probs) > 0 {
		return &Error{File: s.File, Problems: probs}
	}
	return nil
}

func syntaxProblem(err error) Problem {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return Problem{Kind: ProblemSyntax, Line: pe.Position.Line, Reason: pe.Message}
	}
	return Problem{Kind: ProblemSyntax, Reason: err.Error()}
}

var decoderErrRe = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// decoderWhere pulls the line and key out of a BurntSushi decode error; its
// type errors are plain errors with both in the text.
func decoderWhere(err error) (int, string) {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Position.Line, pe.LastKey
	}
	if m := decoderErrRe.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, ""
}

func decoderReason(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Message
	}
	if m := decoderErrRe.FindStringSubmatch(err.Error()); m != nil {
		return m[3]
	}
	return err.Error()
}

var indexRe = regexp.MustCompile(`\[\d+\]`)

func unindexed(key string) string { return indexRe.ReplaceAllString(key, "") }

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// tomlFields maps each TOML key of a struct type to its field type.
func tomlFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("toml")
		if name == "" || name == "-" {
			continue
		}
		m[name] = f.Type
	}
	return m
}

// secretish are key names that look like someone put a secret in the file.
var secretish = []string{"key", "nsec", "secret", "password", "token"}

// checkTable walks a decoded table against the struct type t, exactly (key
// names are case-sensitive, unlike the decoder's fallback), reporting every
// unknown key and every value of the wrong type.
func checkTable(table map[string]any, t reflect.Type, prefix string, probs *[]Problem) {
	fields := tomlFields(t)
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := join(prefix, k)
		ft, ok := fields[k]
		if !ok {
			p := Problem{Kind: ProblemUnknown, Key: path}
			if prefix == "target" {
				for _, w := range secretish {
					if strings.Contains(strings.ToLower(k), w) {
						p.Reason = "secrets never go in a scenario file: name them with target.operator_key_env or target.operator_key_file"
						break
					}
				}
			}
			if p.Reason == "" {
				if near := nearest(k, fields); near != "" {
					p.Reason = "did you mean " + near + "?"
				}
			}
			*probs = append(*probs, p)
			continue
		}
		checkValue(table[k], ft, path, probs)
	}
}

func checkValue(v any, t reflect.Type, path string, probs *[]Problem) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bad := func(want string) {
		*probs = append(*probs, Problem{Kind: ProblemType, Key: path,
			Reason: fmt.Sprintf("is %s, want %s", tomlTypeName(v), want)})
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad("a boolean")
		}
	case reflect.Int, reflect.Int64:
		if _, ok := v.(int64); !ok {
			bad("an integer")
		}
	case reflect.Float64:
		switch v.(type) {
		case int64, float64:
		default:
			bad("a number")
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			bad("a table")
			return
		}
		checkTable(m, t, path, probs)
	case reflect.Map: // a table of values ([capacity] slo: key → list of strings)
		m, ok := v.(map[string]any)
		if !ok {
			bad("a table")
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			checkValue(m[k], t.Elem(), path+"."+k, probs)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String { // a list of strings ([[drill]] command)
			a, ok := v.([]any)
			if !ok {
				bad("an array of strings")
				return
			}
			for i, e := range a {
				if _, ok := e.(string); !ok {
					*probs = append(*probs, Problem{Kind: ProblemType, Key: fmt.Sprintf("%s[%d]", path, i), Reason: fmt.Sprintf("is %s, want a string", tomlTypeName(e))})
				}
			}
			return
		}
		elems, ok := asTables(v)
		if !ok {
			bad("an array of tables")
			return
		}
		for i, m := range elems {
			if m == nil {
				*probs = append(*probs, Problem{Kind: ProblemType, Key: fmt.Sprintf("%s[%d]", path, i), Reason: "is not a table"})
				continue
			}
			checkTable(m, t.Elem(), fmt.Sprintf("%s[%d]", path, i), probs)
		}
	default:
		bad("a supported type") // unreachable for the Scenario type
	}
}

// asTables accepts both [[array]] tables and inline arrays of inline tables;
// a nil element marks a non-table entry.
func asTables(v any) ([]map[string]any, bool) {
	switch a := v.(type) {
	case []map[string]any:
		return a, true
	case []any:
		out := make([]map[string]any, len(a))
		for i, e := range a {
			m, _ := e.(map[string]any)
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

func tomlTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	default:
		return "a date or time"
	}
}

// resolvePath resolves p against the scenario file's directory.
func (s *Scenario) resolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) || s.File == "" {
		return p
	}
	return filepath.Join(filepath.Dir(s.File), p)
}

// nearest is the known key closest to k when k is a near miss (an edit
// distance of at most 2, 1 for keys of four letters or fewer, or a key cut
// short), else "".
func nearest(k string, fields map[string]reflect.Type) string {
	best, bestD := "", 0
	for f := range fields {
		limit := 2
		if len(f) <= 4 {
			limit = 1
		}
		d := editDistance(k, f)
		if d > limit && !(len(k) >= 4 && strings.HasPrefix(f, k)) { // a key cut short (max_p99 for max_p99_ms) is a near miss too
			continue
		}
		if best == "" || d < bestD || d == bestD && f < best {
			best, bestD = f, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// The bounds of a scenario file (docs/security.md): far above any real
// one, far below what hurts the decoder.
const (
	MaxFileBytes = 1 << 20
	MaxNesting   = 32
)

// checkShape refuses a file over MaxFileBytes or nesting inline tables and
// arrays deeper than MaxNesting, reading it once without decoding: brackets
// inside strings and comments do not count.
func checkShape(data []byte) *Problem {
	if len(data) > MaxFileBytes {
		return &Problem{Reason: fmt.Sprintf("the file is %d bytes, above the %d a scenario may have", len(data), MaxFileBytes)}
	}
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i-- // the newline counts the line
		case '"', '\'':
			multi := i+2 < len(data) && data[i+1] == c && data[i+2] == c
			if multi {
				i += 3
			} else {
				i++
			}
			for ; i < len(data); i++ {
				if data[i] == '\n' {
					line++
				}
				if c == '"' && data[i] == '\\' {
					i++
					continue
				}
				if data[i] == c && (!multi || i+2 < len(data) && data[i+1] == c && data[i+2] == c) {
					if multi {
						i += 2
					}
					break
				}
			}
		case '{', '[':
			if depth++; depth > MaxNesting {
				return &Problem{Line: line, Reason: fmt.Sprintf("tables and arrays nest deeper than %d levels", MaxNesting)}
			}
		case '}', ']':
			depth = max(0, depth-1)
		}
	}
	return nil
}
