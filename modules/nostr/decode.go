package nostr

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// ParseEvent decodes a JSON event object as encoding/json would into
// Event (absent fields and null stay zero, keys match case-insensitively
// when no key matches exactly, the last of duplicate keys wins, invalid
// UTF-8 becomes U+FFFD) but with the wire scanner. It does not check the
// event's shape: the relay answers a malformed event with an OK, not a
// NOTICE, so shape is the caller's decision.
func ParseEvent(b []byte) (*Event, error) {
	s := wire.New(b)
	s.WS()
	if s.Lit("null") {
		if s.AtEnd() {
			return &Event{}, nil // encoding/json leaves the zero event
		}
		return nil, fmt.Errorf("nostr: event: %w", s.Fail("data after the event"))
	}
	ev, err := scanEvent(&s, false, false)
	if err == nil && !s.AtEnd() {
		err = s.Fail("data after the event")
	}
	if err != nil {
		return nil, fmt.Errorf("nostr: event: %w", err)
	}
	return ev, nil
}

// ScanEvent reads one event object at the scanner's position, strictly:
// all seven NIP-01 fields, no nulls, and a valid shape (CheckShape). It
// checks no signature. tail says the event runs to (nearly) the end of the
// input, as in an EVENT frame, so one string view of the rest is taken
// without first finding the object's end.
func ScanEvent(s *wire.Scanner, tail bool) (*Event, error) {
	return scanEvent(s, true, tail)
}

// scanEvent first fixes the span the event's strings are sliced from (one
// allocation per event), then reads its members.
func scanEvent(s *wire.Scanner, strict, tail bool) (*Event, error) {
	c, ok := s.Peek()
	if !ok {
		return nil, s.Fail("truncated: expected an object")
	}
	if c != '{' {
		return nil, s.Fail("expected an object")
	}
	start := s.Pos()
	switch {
	case tail && s.Viewing(start):
		// The caller's view (the rest of an EVENT frame) already covers it.
	case tail:
		s.SetView(start, -1)
		defer s.ClearView()
	default:
		if err := s.Skip(1); err != nil {
			// Parse field by field (no view) for the precise error.
			s.SetPos(start + 1)
			if _, ferr := eventFields(s, strict); ferr != nil {
				return nil, ferr
			}
			return nil, err
		}
		s.SetView(start, s.Pos())
		defer s.ClearView()
	}
	s.SetPos(start + 1)
	return eventFields(s, strict)
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

var eventKeys = [...]string{"id", "pubkey", "created_at", "kind", "tags", "content", "sig"}

// eventFields reads the members of an event object, just past its '{'.
func eventFields(s *wire.Scanner, strict bool) (*Event, error) {
	ev := &Event{}
	seen := 0
	s.WS()
	if !s.Eat('}') {
		for {
			key, err := s.Key()
			if err != nil {
				return nil, err
			}
			field := -1
			for i, k := range eventKeys {
				if string(key) == k {
					field = i
					break
				}
			}
			if field < 0 && !strict {
				// encoding/json's fallback: a case-insensitive match.
				for i, k := range eventKeys {
					if bytes.EqualFold(key, []byte(k)) {
						field = i
						break
					}
				}
			}
			if field >= 0 && !strict && s.Lit("null") {
				field = -2 // null leaves the field as it is
			}
			switch field {
			case -2:
			case -1:
				err = s.Skip(1)
			default:
				seen |= 1 << field
				err = eventField(s, ev, field, strict)
			}
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", wire.Quote(key), err)
			}
			s.WS()
			if s.Eat('}') {
				break
			}
			if !s.Eat(',') {
				return nil, s.Fail("expected , or } in an object")
			}
		}
	}
	if !strict {
		return ev, nil
	}
	if seen != hasAll {
		return nil, fmt.Errorf("event lacks %s", missingFields(seen))
	}
	if err := ev.CheckShape(); err != nil {
		return nil, err
	}
	return ev, nil
}

func eventField(s *wire.Scanner, ev *Event, field int, strict bool) error {
	var err error
	str := func() string {
		var v string
		if v, err = s.Str(); err == nil && !strict {
			v = wire.ValidUTF8(v)
		}
		return v
	}
	switch field {
	case 0:
		ev.ID = str()
	case 1:
		ev.PubKey = str()
	case 2:
		ev.CreatedAt, err = s.Int()
	case 3:
		var k int64
		k, err = s.Int()
		ev.Kind = int(k)
		switch {
		case err != nil:
		case strict && (k < 0 || k > 65535):
			err = fmt.Errorf("kind %d out of range", k)
		case int64(int(k)) != k:
			err = fmt.Errorf("kind %d out of range", k)
		}
	case 4:
		ev.Tags, err = scanTags(s, strict)
	case 5:
		ev.Content = str()
	case 6:
		ev.Sig = str()
	}
	return err
}

func missingFields(seen int) string {
	var out []string
	for i, n := range eventKeys {
		if seen&(1<<i) == 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

var errTags = errors.New("tags is not an array")

// scanTags reads an array of arrays of strings. All values share one
// backing array; each tag is a capacity-capped window of it. Lenient mode
// accepts null for a tag (a nil tag) as encoding/json does.
func scanTags(s *wire.Scanner, strict bool) ([][]string, error) {
	if c, ok := s.Peek(); !ok {
		return nil, s.Fail("truncated: expected tags")
	} else if c != '[' {
		return nil, s.Fail(errTags.Error())
	}
	var bounds [16][2]int32 // tag windows; more tags spill to the heap
	spans := bounds[:0]
	vals := make([]string, 0, 16)
	err := s.Array(1, func(int) error {
		if !strict && s.Lit("null") {
			spans = append(spans, [2]int32{-1, -1})
			return nil
		}
		if c, ok := s.Peek(); !ok {
			return s.Fail("truncated: expected a tag")
		} else if c != '[' {
			return s.Fail("tag is not an array")
		}
		lo := len(vals)
		err := s.Array(2, func(int) error {
			v, err := s.Str()
			if err == nil && !strict {
				v = wire.ValidUTF8(v)
			} else if err != nil && !strict && s.Lit("null") {
				// encoding/json leaves a null element as "".
				v, err = "", nil
			}
			vals = append(vals, v)
			return err
		})
		spans = append(spans, [2]int32{int32(lo), int32(len(vals))})
		return err
	})
	if err != nil {
		return nil, err
	}
	tags := make([][]string, len(spans))
	for i, sp := range spans {
		if sp[0] >= 0 {
			tags[i] = vals[sp[0]:sp[1]:sp[1]]
		}
	}
	return tags, nil
}
