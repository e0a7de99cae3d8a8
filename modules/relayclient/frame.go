package relayclient

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Verb is the first element of a relay→client frame.
type Verb uint8

// The relay→client verbs (NIP-01, NIP-42, NIP-45).
const (
	VerbUnknown Verb = iota
	VerbEvent        // ["EVENT", sub, event]
	VerbOK           // ["OK", id, accepted, reason]
	VerbEOSE         // ["EOSE", sub]
	VerbClosed       // ["CLOSED", sub, reason]
	VerbNotice       // ["NOTICE", text]
	VerbAuth         // ["AUTH", challenge]
	VerbCount        // ["COUNT", sub, {"count": n}]
)

func (v Verb) String() string {
	switch v {
	case VerbEvent:
		return "EVENT"
	case VerbOK:
		return "OK"
	case VerbEOSE:
		return "EOSE"
	case VerbClosed:
		return "CLOSED"
	case VerbNotice:
		return "NOTICE"
	case VerbAuth:
		return "AUTH"
	case VerbCount:
		return "COUNT"
	}
	return "unknown"
}

// Frame is one parsed relay→client message.
type Frame struct {
	Verb    Verb
	SubID   string       // EVENT, EOSE, CLOSED, COUNT
	EventID string       // OK
	OK      bool         // OK: accepted
	Message string       // OK and CLOSED reason, NOTICE text, AUTH challenge
	Count   int64        // COUNT
	Event   *nostr.Event // EVENT
}

// ErrFrame is wrapped by every ParseFrame error.
var ErrFrame = errors.New("bad frame")

// maxDepth bounds nesting in values the parser skips (unknown fields), so
// hostile input cannot exhaust the stack.
const maxDepth = 64

// ParseFrame parses one relay→client frame. It is a hand-written scanner
// (no reflection) because every inbound EVENT goes through it on the
// reader goroutine. It accepts only valid JSON, checks the event's shape
// (hex lengths, UTF-8 content) but not its signature, skips unknown event
// fields and extra trailing array elements, and never panics.
func ParseFrame(b []byte) (Frame, error) {
	var f Frame
	s := scanner{b: b}
	s.ws()
	if !s.eat('[') {
		return f, s.top("frame is not a JSON array")
	}
	s.ws()
	vb, esc, err := s.rawString()
	if err != nil {
		return f, s.wrap("verb", err)
	}
	if esc {
		vb = []byte(unescape(vb))
	}
	switch string(vb) {
	case "EVENT":
		f.Verb = VerbEvent
	case "OK":
		f.Verb = VerbOK
	case "EOSE":
		f.Verb = VerbEOSE
	case "CLOSED":
		f.Verb = VerbClosed
	case "NOTICE":
		f.Verb = VerbNotice
	case "AUTH":
		f.Verb = VerbAuth
	case "COUNT":
		f.Verb = VerbCount
	default:
		return f, fmt.Errorf("%w: unknown verb %s", ErrFrame, quote(vb))
	}
	// Every verb has at least one more element.
	if err := s.comma(); err != nil {
		return f, s.wrap(f.Verb.String(), err)
	}
	switch f.Verb {
	case VerbEvent:
		if f.SubID, err = s.str(); err != nil {
			return f, s.wrap("EVENT subscription id", err)
		}
		if err := s.comma(); err != nil {
			return f, s.wrap("EVENT", err)
		}
		if f.Event, err = s.event(true); err != nil {
			return f, s.wrap("EVENT event", err)
		}
	case VerbOK:
		if f.EventID, err = s.str(); err != nil {
			return f, s.wrap("OK event id", err)
		}
		if err := s.comma(); err != nil {
			return f, s.wrap("OK", err)
		}
		if f.OK, err = s.boolean(); err != nil {
			return f, s.wrap("OK accepted", err)
		}
		if s.more() {
			if f.Message, err = s.str(); err != nil {
				return f, s.wrap("OK reason", err)
			}
		}
	case VerbEOSE:
		if f.SubID, err = s.str(); err != nil {
			return f, s.wrap("EOSE subscription id", err)
		}
	case VerbClosed:
		if f.SubID, err = s.str(); err != nil {
			return f, s.wrap("CLOSED subscription id", err)
		}
		if s.more() {
			if f.Message, err = s.str(); err != nil {
				return f, s.wrap("CLOSED reason", err)
			}
		}
	case VerbNotice:
		if f.Message, err = s.str(); err != nil {
			return f, s.wrap("NOTICE text", err)
		}
	case VerbAuth:
		if f.Message, err = s.str(); err != nil {
			return f, s.wrap("AUTH challenge", err)
		}
	case VerbCount:
		if f.SubID, err = s.str(); err != nil {
			return f, s.wrap("COUNT subscription id", err)
		}
		if err := s.comma(); err != nil {
			return f, s.wrap("COUNT", err)
		}
		if f.Count, err = s.countObject(); err != nil {
			return f, s.wrap("COUNT object", err)
		}
	}
	// Tolerate (but validate) extra elements: a newer relay may add some.
	for s.more() {
		if err := s.skip(0); err != nil {
			return f, s.wrap(f.Verb.String()+" extra element", err)
		}
	}
	s.ws()
	if !s.eat(']') {
		return f, s.top("expected ] closing the frame")
	}
	s.ws()
	if s.i != len(s.b) {
		return f, s.top("data after the frame")
	}
	return f, nil
}

// ParseEvents parses a JSON array of events (the POST /query reply).
func ParseEvents(b []byte) ([]nostr.Event, error) {
	s := scanner{b: b}
	s.ws()
	if !s.eat('[') {
		return nil, s.top("expected a JSON array of events")
	}
	var out []nostr.Event
	s.ws()
	if !s.eat(']') {
		for {
			ev, err := s.event(false)
			if err != nil {
				return nil, s.wrap(fmt.Sprintf("event %d", len(out)), err)
			}
			out = append(out, *ev)
			s.ws()
			if s.eat(']') {
				break
			}
			if !s.eat(',') {
				return nil, s.top("expected , or ] in the event array")
			}
			s.ws()
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, s.top("data after the event array")
	}
	if out == nil {
		out = []nostr.Event{}
	}
	return out, nil
}

// ParseCount parses a {"count": n} object (the POST /count reply).
func ParseCount(b []byte) (int64, error) {
	s := scanner{b: b}
	s.ws()
	n, err := s.countObject()
	if err != nil {
		return 0, s.wrap("count object", err)
	}
	s.ws()
	if s.i != len(s.b) {
		return 0, s.top("data after the count object")
	}
	return n, nil
}

// scanner is a validating JSON reader over one buffer. Every method leaves
// s.i just past what it consumed; none panics on any input.
type scanner struct {
	b []byte
	i int
	// src, when set, is string(b[srcOff:srcOff+len(src)]): strings without
	// escapes inside it are sliced from it instead of allocated one by one.
	// It is set per event, so a kept string retains one event, not a body.
	src    string
	srcOff int
}

type scanError struct {
	at  int
	msg string
}

func (e *scanError) Error() string { return fmt.Sprintf("byte %d: %s", e.at, e.msg) }

func (s *scanner) fail(msg string) error { return &scanError{at: s.i, msg: msg} }

// wrap marks err as a frame error and says which part of the frame it is in.
func (s *scanner) wrap(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrFrame, what, err)
}

// top marks a frame-level error.
func (s *scanner) top(msg string) error { return fmt.Errorf("%w: %w", ErrFrame, s.fail(msg)) }

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// comma consumes "," between array elements (with whitespace).
func (s *scanner) comma() error {
	s.ws()
	if !s.eat(',') {
		if s.i >= len(s.b) {
			return s.fail("truncated: frame ends early")
		}
		return s.fail("missing element")
	}
	s.ws()
	return nil
}

// more reports whether another array element follows, consuming its comma.
func (s *scanner) more() bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ',' {
		s.i++
		s.ws()
		return true
	}
	return false
}

// rawString consumes a JSON string and returns its raw bytes (between the
// quotes) and whether it holds escapes. It validates escapes and rejects
// control characters, as JSON requires.
func (s *scanner) rawString() ([]byte, bool, error) {
	if s.i >= len(s.b) {
		return nil, false, s.fail("truncated: expected a string")
	}
	if s.b[s.i] != '"' {
		return nil, false, s.fail("expected a string")
	}
	s.i++
	start := s.i
	esc := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, esc, nil
		case c == '\\':
			esc = true
			if s.i+1 >= len(s.b) {
				return nil, false, s.fail("truncated: string ends in an escape")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, s.fail("truncated: string ends in a \\u escape")
				}
				for k := s.i + 2; k < s.i+6; k++ {
					if hexVal(s.b[k]) < 0 {
						return nil, false, s.fail("bad \\u escape")
					}
				}
				s.i += 6
			default:
				return nil, false, s.fail("bad escape")
			}
		case c < 0x20:
			return nil, false, s.fail("control character in a string")
		default:
			s.i++
		}
	}
	return nil, false, s.fail("truncated: unterminated string")
}

func (s *scanner) str() (string, error) {
	start := s.i + 1
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	if esc {
		return unescape(raw), nil
	}
	if lo, hi := start-s.srcOff, start-s.srcOff+len(raw); s.src != "" && lo >= 0 && hi <= len(s.src) {
		return s.src[lo:hi], nil
	}
	return string(raw), nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unescape decodes a raw string body that rawString validated. Lone
// surrogates become U+FFFD, as in encoding/json.
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			break
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
			i += 2
		case 'b':
			out = append(out, '\b')
			i += 2
		case 'f':
			out = append(out, '\f')
			i += 2
		case 'n':
			out = append(out, '\n')
			i += 2
		case 'r':
			out = append(out, '\r')
			i += 2
		case 't':
			out = append(out, '\t')
			i += 2
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return string(out)
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw, i+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return string(out)
		}
	}
	return string(out)
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for k := at; k < at+4; k++ {
		v := hexVal(b[k])
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func (s *scanner) boolean() (bool, error) {
	switch {
	case s.lit("true"):
		return true, nil
	case s.lit("false"):
		return false, nil
	}
	if s.i >= len(s.b) {
		return false, s.fail("truncated: expected true or false")
	}
	return false, s.fail("expected true or false")
}

func (s *scanner) lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// integer consumes a JSON number that must be an integer fitting int64.
func (s *scanner) integer() (int64, error) {
	neg := s.eat('-')
	if s.i >= len(s.b) {
		return 0, s.fail("truncated: expected an integer")
	}
	if s.b[s.i] < '0' || s.b[s.i] > '9' {
		return 0, s.fail("expected an integer")
	}
	if s.b[s.i] == '0' && s.i+1 < len(s.b) && s.b[s.i+1] >= '0' && s.b[s.i+1] <= '9' {
		return 0, s.fail("leading zero in a number")
	}
	var n uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		d := uint64(s.b[s.i] - '0')
		if n > (1<<63-1-d)/10 && !(neg && n == (1<<63)/10 && d == 8) {
			return 0, s.fail("integer out of range")
		}
		n = n*10 + d
		s.i++
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, s.fail("expected an integer, got a fraction or exponent")
	}
	if neg {
		return -int64(n), nil
	}
	return int64(n), nil
}

// skip consumes and validates any JSON value.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.fail("nested too deep")
	}
	s.ws()
	if s.i >= len(s.b) {
		return s.fail("truncated: expected a value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return nil
		}
		for {
			s.ws()
			if _, _, err := s.rawString(); err != nil {
				return err
			}
			s.ws()
			if !s.eat(':') {
				return s.fail("expected : in an object")
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.eat('}') {
				return nil
			}
			if !s.eat(',') {
				return s.fail("expected , or } in an object")
			}
		}
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.eat(']') {
				return nil
			}
			if !s.eat(',') {
				return s.fail("expected , or ] in an array")
			}
		}
	case c == 't':
		if s.lit("true") {
			return nil
		}
	case c == 'f':
		if s.lit("false") {
			return nil
		}
	case c == 'n':
		if s.lit("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return s.fail("expected a JSON value")
}

// number validates the full JSON number grammar.
func (s *scanner) number() error {
	s.eat('-')
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return s.fail("bad number")
	}
	if s.eat('.') && digits() == 0 {
		return s.fail("bad number fraction")
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if !s.eat('+') {
			s.eat('-')
		}
		if digits() == 0 {
			return s.fail("bad number exponent")
		}
	}
	return nil
}

// object walks a JSON object, calling field for each key; field consumes
// the value (or returns handled=false to have it skipped).
func (s *scanner) object(field func(key []byte) (bool, error)) error {
	s.ws()
	if s.i >= len(s.b) {
		return s.fail("truncated: expected an object")
	}
	if !s.eat('{') {
		return s.fail("expected an object")
	}
	s.ws()
	if s.eat('}') {
		return nil
	}
	for {
		s.ws()
		key, esc, err := s.rawString()
		if err != nil {
			return err
		}
		if esc {
			key = []byte(unescape(key))
		}
		s.ws()
		if !s.eat(':') {
			return s.fail("expected : after an object key")
		}
		s.ws()
		handled, err := field(key)
		if err != nil {
			return fmt.Errorf("field %s: %w", quote(key), err)
		}
		if !handled {
			if err := s.skip(1); err != nil {
				return err
			}
		}
		s.ws()
		if s.eat('}') {
			return nil
		}
		if s.i >= len(s.b) {
			return s.fail("truncated: unterminated object")
		}
		if !s.eat(',') {
			return s.fail("expected , or } in an object")
		}
	}
}

const (
	hasID = 1 << iota
	hasPubKey
	hasCreatedAt
	hasKind
	hasTags
	hasContent
	hasSig
	hasAll = hasID | hasPubKey | hasCreatedAt | hasKind | hasTags | hasContent | hasSig
)

// event parses a NIP-01 event object and checks its shape. It first finds
// the object's end (validating it), takes one string of its bytes, and
// slices every unescaped field from that string.
//
// tail says the event runs to (nearly) the end of the input, as in an
// EVENT frame: the string view is then taken of the rest of the input in
// one pass, with no need to find the object's end first.
func (s *scanner) event(tail bool) (*nostr.Event, error) {
	s.ws()
	start := s.i
	if s.i >= len(s.b) {
		return nil, s.fail("truncated: expected an object")
	}
	if s.b[start] != '{' {
		return nil, s.fail("expected an object")
	}
	if tail {
		s.src, s.srcOff = string(s.b[start:]), start
		defer func() { s.src, s.srcOff = "", 0 }()
		s.i = start + 1
		return s.eventFields()
	}
	if err := s.skip(1); err != nil {
		// Parse field by field (no string view) for the precise error.
		s.i = start + 1
		if _, ferr := s.eventFields(); ferr != nil {
			return nil, ferr
		}
		return nil, err
	}
	s.src, s.srcOff = string(s.b[start:s.i]), start
	defer func() { s.src, s.srcOff = "", 0 }()
	s.i = start + 1
	return s.eventFields()
}

// eventFields parses the members of an event object, s.i just past its '{'.
func (s *scanner) eventFields() (*nostr.Event, error) {
	ev := &nostr.Event{}
	seen := 0
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, esc, err := s.rawString()
			if err != nil {
				return nil, err
			}
			if esc {
				key = []byte(unescape(key))
			}
			s.ws()
			if !s.eat(':') {
				return nil, s.fail("expected : after an object key")
			}
			s.ws()
			switch string(key) {
			case "id":
				seen |= hasID
				ev.ID, err = s.str()
			case "pubkey":
				seen |= hasPubKey
				ev.PubKey, err = s.str()
			case "created_at":
				seen |= hasCreatedAt
				ev.CreatedAt, err = s.integer()
			case "kind":
				seen |= hasKind
				var k int64
				k, err = s.integer()
				ev.Kind = int(k)
				if err == nil && (k < 0 || k > 65535) {
					err = fmt.Errorf("kind %d out of range", k)
				}
			case "tags":
				seen |= hasTags
				ev.Tags, err = s.tags()
			case "content":
				seen |= hasContent
				ev.Content, err = s.str()
			case "sig":
				seen |= hasSig
				ev.Sig, err = s.str()
			default:
				err = s.skip(1)
			}
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", quote(key), err)
			}
			s.ws()
			if s.eat('}') {
				break
			}
			if !s.eat(',') {
				return nil, s.fail("expected , or } in an object")
			}
		}
	}
	if seen != hasAll {
		return nil, fmt.Errorf("event lacks %s", missingFields(seen))
	}
	if err := ev.CheckShape(); err != nil {
		return nil, err
	}
	return ev, nil
}

func missingFields(seen int) string {
	names := []string{"id", "pubkey", "created_at", "kind", "tags", "content", "sig"}
	out := ""
	for i, n := range names {
		if seen&(1<<i) == 0 {
			if out != "" {
				out += ", "
			}
			out += n
		}
	}
	return out
}

// tags parses an array of arrays of strings. All values share one backing
// array; each tag is a capacity-capped window of it.
func (s *scanner) tags() ([][]string, error) {
	if s.i >= len(s.b) {
		return nil, s.fail("truncated: expected tags")
	}
	if !s.eat('[') {
		return nil, s.fail("tags is not an array")
	}
	var bounds [16][2]int32 // tag windows; more tags spill to the heap
	spans := bounds[:0]
	vals := make([]string, 0, 16)
	s.ws()
	if !s.eat(']') {
		for {
			s.ws()
			if !s.eat('[') {
				if s.i >= len(s.b) {
					return nil, s.fail("truncated: expected a tag")
				}
				return nil, s.fail("tag is not an array")
			}
			lo := len(vals)
			s.ws()
			if !s.eat(']') {
				for {
					s.ws()
					v, err := s.str()
					if err != nil {
						return nil, err
					}
					vals = append(vals, v)
					s.ws()
					if s.eat(']') {
						break
					}
					if !s.eat(',') {
						if s.i >= len(s.b) {
							return nil, s.fail("truncated: unterminated tag")
						}
						return nil, s.fail("expected , or ] in a tag")
					}
				}
			}
			spans = append(spans, [2]int32{int32(lo), int32(len(vals))})
			s.ws()
			if s.eat(']') {
				break
			}
			if !s.eat(',') {
				if s.i >= len(s.b) {
					return nil, s.fail("truncated: unterminated tags")
				}
				return nil, s.fail("expected , or ] in tags")
			}
		}
	}
	tags := make([][]string, len(spans))
	for i, sp := range spans {
		tags[i] = vals[sp[0]:sp[1]:sp[1]]
	}
	return tags, nil
}

// countObject parses {"count": n, ...}.
func (s *scanner) countObject() (int64, error) {
	var n int64
	found := false
	err := s.object(func(key []byte) (bool, error) {
		if string(key) != "count" {
			return false, nil
		}
		var err error
		n, err = s.integer()
		found = true
		return true, err
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, errors.New(`no "count" field`)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative count %d", n)
	}
	return n, nil
}
