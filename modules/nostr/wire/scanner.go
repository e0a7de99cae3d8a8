// Package wire is the one inbound-JSON reader of buzzload's Nostr traffic:
// a validating, allocation-free scanner over one buffer that the relay
// client (relay→client frames), the relay (client→relay messages) and the
// relay's store (filters) all decode with. It knows JSON, not Nostr; the
// event decoder built on it is nostr.ScanEvent.
//
// It is hand-written rather than encoding/json because every delivered
// EVENT goes through it on a reader goroutine: reflection and
// json.RawMessage copies cost several times the scanner
// (BenchmarkParseEvent in package nostr). Tests check it against
// encoding/json as an oracle.
package wire

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// MaxDepth bounds nesting in values the scanner skips, so hostile input
// cannot exhaust the stack.
const MaxDepth = 64

// SyntaxError is malformed or unexpected JSON at byte Offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }

// Scanner reads JSON values from B. Every method leaves the position just
// past what it consumed; none panics on any input.
type Scanner struct {
	b []byte
	i int
	// src, when set, is string(b[srcOff:srcOff+len(src)]): strings without
	// escapes inside it are sliced from it instead of allocated one by one.
	src    string
	srcOff int
}

// New returns a scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// Pos is the offset of the next unread byte.
func (s *Scanner) Pos() int { return s.i }

// SetPos moves the scanner to offset i (one it returned from Pos).
func (s *Scanner) SetPos(i int) { s.i = i }

// Bytes returns b[from:to] of the input.
func (s *Scanner) Bytes(from, to int) []byte { return s.b[from:to] }

// AtEnd reports whether nothing but whitespace is left.
func (s *Scanner) AtEnd() bool {
	s.WS()
	return s.i == len(s.b)
}

// Peek returns the next byte after whitespace, and false at the end.
func (s *Scanner) Peek() (byte, bool) {
	s.WS()
	if s.i >= len(s.b) {
		return 0, false
	}
	return s.b[s.i], true
}

// SetView makes strings read from b[from:] (to the end of the input when
// to < 0) slices of one string copy of that span, so an event's fields
// share one allocation. ClearView ends it; a kept string then retains
// only that span.
func (s *Scanner) SetView(from, to int) {
	if to < 0 {
		to = len(s.b)
	}
	s.src, s.srcOff = string(s.b[from:to]), from
}

// Viewing reports whether a view is set that covers offset i to the end of
// the input.
func (s *Scanner) Viewing(i int) bool {
	return s.src != "" && i >= s.srcOff && s.srcOff+len(s.src) == len(s.b)
}

// ClearView ends SetView.
func (s *Scanner) ClearView() { s.src, s.srcOff = "", 0 }

// Fail returns a SyntaxError at the current position.
func (s *Scanner) Fail(msg string) error { return &SyntaxError{Offset: s.i, Msg: msg} }

// WS skips whitespace.
func (s *Scanner) WS() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Eat consumes c if it is the next byte (no whitespace skipped).
func (s *Scanner) Eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// Comma consumes "," between array elements (with whitespace).
func (s *Scanner) Comma() error {
	s.WS()
	if !s.Eat(',') {
		if s.i >= len(s.b) {
			return s.Fail("truncated: frame ends early")
		}
		return s.Fail("missing element")
	}
	s.WS()
	return nil
}

// More reports whether another array element follows, consuming its comma.
func (s *Scanner) More() bool {
	s.WS()
	if s.i < len(s.b) && s.b[s.i] == ',' {
		s.i++
		s.WS()
		return true
	}
	return false
}

// RawString consumes a JSON string and returns its raw bytes (between the
// quotes) and whether it holds escapes. It validates escapes and rejects
// control characters, as JSON requires.
func (s *Scanner) RawString() ([]byte, bool, error) {
	if s.i >= len(s.b) {
		return nil, false, s.Fail("truncated: expected a string")
	}
	if s.b[s.i] != '"' {
		return nil, false, s.Fail("expected a string")
	}
	s.i++
	start := s.i
	esc := false
	for s.i < len(s.b) {
		s.i = plainRun(s.b, s.i)
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, esc, nil
		case c == '\\':
			esc = true
			if s.i+1 >= len(s.b) {
				return nil, false, s.Fail("truncated: string ends in an escape")
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, s.Fail("truncated: string ends in a \\u escape")
				}
				for k := s.i + 2; k < s.i+6; k++ {
					if hexVal(s.b[k]) < 0 {
						return nil, false, s.Fail("bad \\u escape")
					}
				}
				s.i += 6
			default:
				return nil, false, s.Fail("bad escape")
			}
		case c < 0x20:
			return nil, false, s.Fail("control character in a string")
		default:
			s.i++
		}
	}
	return nil, false, s.Fail("truncated: unterminated string")
}

// Key consumes an object key and its colon; escaped keys are decoded.
func (s *Scanner) Key() ([]byte, error) {
	s.WS()
	key, esc, err := s.RawString()
	if err != nil {
		return nil, err
	}
	if esc {
		key = []byte(Unescape(key))
	}
	s.WS()
	if !s.Eat(':') {
		return nil, s.Fail("expected : after an object key")
	}
	s.WS()
	return key, nil
}

// Str consumes a JSON string and returns its decoded value, sliced from
// the view (SetView) when it has no escapes.
func (s *Scanner) Str() (string, error) {
	start := s.i + 1
	raw, esc, err := s.RawString()
	if err != nil {
		return "", err
	}
	if esc {
		return Unescape(raw), nil
	}
	if lo, hi := start-s.srcOff, start-s.srcOff+len(raw); s.src != "" && lo >= 0 && hi <= len(s.src) {
		return s.src[lo:hi], nil
	}
	return string(raw), nil
}

// plainRun returns the offset of the first byte at or after i that ends a
// run of plain string bytes (not '"', '\\' or a control character), or
// len(b). It tests eight bytes at a time: strings are most of what an
// EVENT frame holds (id, pubkey, sig, content), and the byte-at-a-time
// loop was most of the scanner's time (BenchmarkScanEventView).
func plainRun(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ (ones * '"')
		bs := w ^ (ones * '\\')
		// A byte < 0x20, or equal to '"' or '\\' (as a zero byte of q
		// or bs): exact as a whole-word test (Hacker's Delight 6-1).
		if ((w-ones*0x20)&^w|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
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

// simpleEscape maps the letter after a backslash to the byte it stands for.
var simpleEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// Bool consumes true or false.
func (s *Scanner) Bool() (bool, error) {
	switch {
	case s.Lit("true"):
		return true, nil
	case s.Lit("false"):
		return false, nil
	}
	if s.i >= len(s.b) {
		return false, s.Fail("truncated: expected true or false")
	}
	return false, s.Fail("expected true or false")
}

// Lit consumes word if the input continues with it.
func (s *Scanner) Lit(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// Int consumes a JSON number that must be an integer fitting int64.
func (s *Scanner) Int() (int64, error) {
	neg := s.Eat('-')
	if s.i >= len(s.b) {
		return 0, s.Fail("truncated: expected an integer")
	}
	if s.b[s.i] < '0' || s.b[s.i] > '9' {
		return 0, s.Fail("expected an integer")
	}
	if s.b[s.i] == '0' && s.i+1 < len(s.b) && s.b[s.i+1] >= '0' && s.b[s.i+1] <= '9' {
		return 0, s.Fail("leading zero in a number")
	}
	var n uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		d := uint64(s.b[s.i] - '0')
		if n > (1<<63-1-d)/10 && !(neg && n == (1<<63)/10 && d == 8) {
			return 0, s.Fail("integer out of range")
		}
		n = n*10 + d
		s.i++
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, s.Fail("expected an integer, got a fraction or exponent")
	}
	if neg {
		return -int64(n), nil
	}
	return int64(n), nil
}

// Skip consumes and validates any JSON value; depth is how deep it is
// already nested.
func (s *Scanner) Skip(depth int) error {
	if depth > MaxDepth {
		return s.Fail("nested too deep")
	}
	s.WS()
	if s.i >= len(s.b) {
		return s.Fail("truncated: expected a value")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, err := s.RawString()
		return err
	case c == '{':
		return s.object(depth, func([]byte) (bool, error) { return false, nil })
	case c == '[':
		return s.Array(depth, func(int) error { return s.Skip(depth + 1) })
	case c == 't':
		if s.Lit("true") {
			return nil
		}
	case c == 'f':
		if s.Lit("false") {
			return nil
		}
	case c == 'n':
		if s.Lit("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return s.Fail("expected a JSON value")
}

// Value consumes any JSON value and returns its bytes (whitespace trimmed).
func (s *Scanner) Value(depth int) ([]byte, error) {
	s.WS()
	start := s.i
	if err := s.Skip(depth); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// number validates the full JSON number grammar.
func (s *Scanner) number() error {
	s.Eat('-')
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
		return s.Fail("bad number")
	}
	if s.Eat('.') && digits() == 0 {
		return s.Fail("bad number fraction")
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if !s.Eat('+') {
			s.Eat('-')
		}
		if digits() == 0 {
			return s.Fail("bad number exponent")
		}
	}
	return nil
}

// Object walks a JSON object, calling field for each key; field consumes
// the value (or returns handled=false to have it skipped). A field error
// is wrapped with the key's name.
func (s *Scanner) Object(field func(key []byte) (bool, error)) error {
	return s.object(0, field)
}

func (s *Scanner) object(depth int, field func(key []byte) (bool, error)) error {
	return s.container(depth, '{', '}', "an object", func(int) error {
		key, err := s.Key()
		if err != nil {
			return err
		}
		handled, err := field(key)
		if err != nil {
			return fmt.Errorf("field %s: %w", Quote(key), err)
		}
		if !handled {
			return s.Skip(depth + 1)
		}
		return nil
	})
}

// Array walks a JSON array, calling elem with the scanner at each element;
// elem must consume it. depth is the array's nesting.
func (s *Scanner) Array(depth int, elem func(i int) error) error {
	return s.container(depth, '[', ']', "an array", elem)
}

// container reads open, members separated by commas (each read by member),
// and close.
func (s *Scanner) container(depth int, open, close byte, what string, member func(i int) error) error {
	if depth > MaxDepth {
		return s.Fail("nested too deep")
	}
	s.WS()
	if s.i >= len(s.b) {
		return s.Fail("truncated: expected " + what)
	}
	if !s.Eat(open) {
		return s.Fail("expected " + what)
	}
	s.WS()
	if s.Eat(close) {
		return nil
	}
	for n := 0; ; n++ {
		s.WS()
		if err := member(n); err != nil {
			return err
		}
		s.WS()
		if s.Eat(close) {
			return nil
		}
		if s.i >= len(s.b) {
			return s.Fail("truncated: unterminated " + what[strings.IndexByte(what, ' ')+1:])
		}
		if !s.Eat(',') {
			return s.Fail("expected , or " + string(close) + " in " + what)
		}
	}
}

// Elements splits the JSON array b into its elements' bytes, appended to
// dst; anything after the array but whitespace is an error.
func Elements(b []byte, dst [][]byte) ([][]byte, error) {
	s := New(b)
	err := s.Array(0, func(int) error {
		v, err := s.Value(1)
		dst = append(dst, v)
		return err
	})
	if err != nil {
		return dst, err
	}
	if !s.AtEnd() {
		return dst, s.Fail("data after the array")
	}
	return dst, nil
}

// maxQuote is how much of untrusted input an error quotes.
const maxQuote = 120
