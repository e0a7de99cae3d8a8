package nostr

import (
	"unicode/utf8"

	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// EventView is an event read in place from a buffer: validated as strictly
// as ScanEvent validates, but nothing is copied out except the id and the
// pubkey (fixed arrays) and the two integers. Tags and content stay spans
// of the buffer, read on demand. It exists because every delivered EVENT
// goes through it on a reader goroutine, and most subscribers need only
// the kind, a tag or two and the send time (issue 16, "Delivery path"):
// ScanEvent's copies and allocations were a quarter of a delivery's CPU.
//
// A view refers to its buffer: it is valid only until the buffer is reused
// (for a relayclient callback, until the callback returns). Event returns
// an owned copy.
type EventView struct {
	ID        [64]byte // lower-case hex
	PubKey    [64]byte // lower-case hex
	CreatedAt int64
	Kind      int

	raw     []byte // the event object
	tags    []byte // the tags array
	content []byte // the content string's body, raw
	cEsc    bool   // content holds escapes
}

// IDString returns the id as a string (an allocation).
func (v *EventView) IDString() string { return string(v.ID[:]) }

// PubKeyString returns the pubkey as a string (an allocation).
func (v *EventView) PubKeyString() string { return string(v.PubKey[:]) }

// Raw is the event object's JSON as it arrived.
func (v *EventView) Raw() []byte { return v.raw }

// Content decodes the content (an allocation).
func (v *EventView) Content() string {
	if v.cEsc {
		return wire.Unescape(v.content)
	}
	return string(v.content)
}

// Event decodes the whole event into an owned Event, as ScanEvent does.
func (v *EventView) Event() (*Event, error) {
	s := wire.New(v.raw)
	return ScanEvent(&s, false)
}

// TagValue returns the second element ("" when the tag has only a name) of
// the first tag named name that has at least minLen elements, decoded;
// ok is false when there is none. minLen 1 is Event.TagValue's rule.
// Without escapes in the value, it is a slice of the buffer (no allocation).
func (v *EventView) TagValue(name string, minLen int) (value []byte, ok bool) {
	s := wire.New(v.tags)
	s.WS()
	if !s.Eat('[') {
		return nil, false
	}
	for {
		s.WS()
		if !s.Eat('[') {
			return nil, false // the end of the tags (they were validated)
		}
		n, match := 0, false
		var val []byte
		for {
			s.WS()
			if s.Eat(']') {
				break
			}
			raw, esc, err := s.RawString()
			if err != nil {
				return nil, false
			}
			switch {
			case n == 0:
				match = equalRaw(raw, esc, name)
			case n == 1 && match:
				val = raw
				if esc {
					val = []byte(wire.Unescape(raw))
				}
			}
			n++
			s.WS()
			s.Eat(',')
		}
		if match && n >= minLen {
			if val == nil {
				val = []byte{}
			}
			return val, true
		}
		s.WS()
		if !s.Eat(',') {
			return nil, false
		}
	}
}

func equalRaw(raw []byte, esc bool, want string) bool {
	if esc {
		return wire.Unescape(raw) == want
	}
	return string(raw) == want
}

// ScanEventView reads one event object at the scanner's position into v,
// accepting exactly what ScanEvent accepts. On error v is unspecified and
// the error is ScanEvent's own (the event is scanned again to find it).
func ScanEventView(s *wire.Scanner, v *EventView) error {
	start := s.Pos()
	if scanView(s, v) {
		return nil
	}
	s.SetPos(start)
	if _, err := ScanEvent(s, false); err != nil {
		return err
	}
	// Unreachable while the two agree (FuzzEventViewMatchesScanEvent).
	return s.Fail("event rejected by the in-place scan")
}

// scanView is ScanEvent's strict rules without building an Event: the
// same duplicate-key rule (the last wins, shape is checked on the final
// values), the same shape checks.
func scanView(s *wire.Scanner, v *EventView) bool {
	c, ok := s.Peek()
	if !ok || c != '{' {
		return false
	}
	start := s.Pos()
	s.Eat('{')
	var id, pub, sig []byte
	var idEsc, pubEsc, sigEsc bool
	seen := 0
	v.cEsc = false
	s.WS()
	if !s.Eat('}') {
		for {
			key, err := s.Key()
			if err != nil {
				return false
			}
			switch string(key) {
			case "id":
				id, idEsc, err = s.RawString()
				seen |= hasID
			case "pubkey":
				pub, pubEsc, err = s.RawString()
				seen |= hasPubKey
			case "sig":
				sig, sigEsc, err = s.RawString()
				seen |= hasSig
			case "created_at":
				v.CreatedAt, err = s.Int()
				seen |= hasCreatedAt
			case "kind":
				var k int64
				if k, err = s.Int(); err == nil && (k < 0 || k > 65535) {
					return false
				}
				v.Kind = int(k)
				seen |= hasKind
			case "tags":
				from := s.Pos()
				if !viewTags(s) {
					return false
				}
				v.tags = s.Bytes(from, s.Pos())
				seen |= hasTags
			case "content":
				v.content, v.cEsc, err = s.RawString()
				seen |= hasContent
			default:
				err = s.Skip(1)
			}
			if err != nil {
				return false
			}
			s.WS()
			if s.Eat('}') {
				break
			}
			if !s.Eat(',') {
				return false
			}
		}
	}
	if seen != hasAll ||
		!hexInto(v.ID[:], id, idEsc) || !hexInto(v.PubKey[:], pub, pubEsc) || !hexInto(nil, sig, sigEsc) ||
		!utf8.Valid(v.content) {
		// Escapes are ASCII and decode to whole runes, so the raw content
		// is valid UTF-8 exactly when the decoded one is.
		return false
	}
	v.raw = s.Bytes(start, s.Pos())
	return true
}

// hexInto checks that the raw string decodes to len(dst) (or, with dst
// nil, 128) lower-case hex characters and copies them into dst.
func hexInto(dst, raw []byte, esc bool) bool {
	n := len(dst)
	if dst == nil {
		n = 128
	}
	if esc {
		raw = []byte(wire.Unescape(raw))
	}
	if len(raw) != n {
		return false
	}
	// Branch-free over a table: 256 hex characters an event, the largest
	// part of its validation (BenchmarkScanEventView).
	var bad byte
	for _, c := range raw {
		bad |= notLowerHex[c]
	}
	if bad != 0 {
		return false
	}
	copy(dst, raw)
	return true
}

// notLowerHex is 1 for every byte that is not a lower-case hex digit.
var notLowerHex = func() (t [256]byte) {
	for c := range t {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			t[c] = 1
		}
	}
	return t
}()

// viewTags validates an array of arrays of strings, as scanTags does strictly.
func viewTags(s *wire.Scanner) bool {
	if c, ok := s.Peek(); !ok || c != '[' {
		return false
	}
	err := s.Array(1, func(int) error {
		if c, ok := s.Peek(); !ok || c != '[' {
			return errTags
		}
		return s.Array(2, func(int) error {
			_, _, err := s.RawString()
			return err
		})
	})
	return err == nil
}
