package relayclient

import (
	"errors"
	"fmt"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// Verb is the first element of a frame (wire.Verb: one definition per verb).
type Verb = wire.Verb

// The relay→client verbs (NIP-01, NIP-42, NIP-45).
const (
	VerbUnknown = wire.VerbUnknown
	VerbEvent   = wire.VerbEvent  // ["EVENT", sub, event]
	VerbOK      = wire.VerbOK     // ["OK", id, accepted, reason]
	VerbEOSE    = wire.VerbEOSE   // ["EOSE", sub]
	VerbClosed  = wire.VerbClosed // ["CLOSED", sub, reason]
	VerbNotice  = wire.VerbNotice // ["NOTICE", text]
	VerbAuth    = wire.VerbAuth   // ["AUTH", challenge]
	VerbCount   = wire.VerbCount  // ["COUNT", sub, {"count": n}]
)

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

// inFrame is a frame as the reader goroutine scans it (scanFrame): an
// EVENT's subscription id and event stay in the frame's buffer.
type inFrame struct {
	Frame
	sub  []byte          // EVENT subscription id
	view nostr.EventView // EVENT event, in place (SubID and Event stay empty)
}

// ErrFrame is wrapped by every ParseFrame error.
var ErrFrame = errors.New("bad frame")

// ParseFrame parses one relay→client frame with the shared wire scanner
// (no reflection, see package wire) because every inbound EVENT goes
// through it on the reader goroutine. It accepts only valid JSON, checks the event's shape
// (hex lengths, UTF-8 content) but not its signature, skips unknown event
// fields and extra trailing array elements, and never panics.
func ParseFrame(b []byte) (Frame, error) {
	var f Frame
	err := parseFrame(b, &f, nil)
	return f, err
}

// scanFrame is ParseFrame for the reader goroutine: an EVENT is read in
// place into f.view and f.sub, so a delivery allocates nothing until a
// subscriber asks for the whole event. It accepts exactly what ParseFrame
// accepts, with ParseFrame's errors (a rejected frame is parsed again by
// ParseFrame to name the fault). f is overwritten; the view refers to b.
func scanFrame(b []byte, f *inFrame) error {
	f.Frame, f.sub = Frame{}, nil
	err := parseFrame(b, &f.Frame, f)
	if err == nil {
		return nil
	}
	if _, ferr := ParseFrame(b); ferr != nil {
		return ferr
	}
	return err // unreachable while the two agree (checkScanFrame in frame_test.go)
}

// parseFrame parses b into f; with in set an EVENT is read in place into it.
func parseFrame(b []byte, f *Frame, in *inFrame) error {
	s := wire.New(b)
	s.WS()
	if !s.Eat('[') {
		return top(&s, "frame is not a JSON array")
	}
	s.WS()
	vb, esc, err := s.RawString()
	if err != nil {
		return wrap("verb", err)
	}
	if esc {
		vb = []byte(wire.Unescape(vb))
	}
	switch f.Verb = wire.ParseVerb(vb); f.Verb {
	case VerbEvent, VerbOK, VerbEOSE, VerbClosed, VerbNotice, VerbAuth, VerbCount:
	default:
		// REQ, CLOSE and unknown labels: not a relay→client frame.
		f.Verb = VerbUnknown
		return fmt.Errorf("%w: unknown verb %s", ErrFrame, quote(vb))
	}
	// Every verb has at least one more element.
	if err := s.Comma(); err != nil {
		return wrap(f.Verb.String(), err)
	}
	switch f.Verb {
	case VerbEvent:
		if in != nil {
			raw, esc, err := s.RawString()
			if err != nil {
				return wrap("EVENT subscription id", err)
			}
			if esc {
				raw = []byte(wire.Unescape(raw))
			}
			in.sub = raw
			if err := s.Comma(); err != nil {
				return wrap("EVENT", err)
			}
			if err := nostr.ScanEventView(&s, &in.view); err != nil {
				return wrap("EVENT event", err)
			}
			break
		}
		// One string copy of the rest of the frame backs the subscription
		// id and every field of the event (nostr.ScanEvent keeps the view).
		s.SetView(s.Pos(), -1)
		defer s.ClearView()
		if f.SubID, err = s.Str(); err != nil {
			return wrap("EVENT subscription id", err)
		}
		if err := s.Comma(); err != nil {
			return wrap("EVENT", err)
		}
		if f.Event, err = nostr.ScanEvent(&s, true); err != nil {
			return wrap("EVENT event", err)
		}
	case VerbOK:
		var e wire.OKEnvelope
		err = e.Scan(&s)
		f.EventID, f.OK, f.Message = e.EventID, e.OK, e.Reason
	case VerbEOSE:
		var e wire.EOSEEnvelope
		err = e.Scan(&s)
		f.SubID = e.SubID
	case VerbClosed:
		var e wire.ClosedEnvelope
		err = e.Scan(&s)
		f.SubID, f.Message = e.SubID, e.Reason
	case VerbNotice:
		var e wire.NoticeEnvelope
		err = e.Scan(&s)
		f.Message = e.Message
	case VerbAuth:
		var e wire.AuthEnvelope
		err = e.Scan(&s)
		f.Message = e.Challenge
	case VerbCount:
		var e wire.CountEnvelope
		err = e.Scan(&s)
		f.SubID, f.Count = e.SubID, e.Count
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFrame, err)
	}
	// Tolerate (but validate) extra elements: a newer relay may add some.
	for s.More() {
		if err := s.Skip(0); err != nil {
			return wrap(f.Verb.String()+" extra element", err)
		}
	}
	s.WS()
	if !s.Eat(']') {
		return top(&s, "expected ] closing the frame")
	}
	s.WS()
	if !s.AtEnd() {
		return top(&s, "data after the frame")
	}
	return nil
}

// ParseEvents parses a JSON array of events (the POST /query reply).
func ParseEvents(b []byte) ([]nostr.Event, error) {
	s := wire.New(b)
	s.WS()
	if !s.Eat('[') {
		return nil, top(&s, "expected a JSON array of events")
	}
	var out []nostr.Event
	s.WS()
	if !s.Eat(']') {
		for {
			ev, err := nostr.ScanEvent(&s, false)
			if err != nil {
				return nil, wrap(fmt.Sprintf("event %d", len(out)), err)
			}
			out = append(out, *ev)
			s.WS()
			if s.Eat(']') {
				break
			}
			if !s.Eat(',') {
				return nil, top(&s, "expected , or ] in the event array")
			}
			s.WS()
		}
	}
	s.WS()
	if !s.AtEnd() {
		return nil, top(&s, "data after the event array")
	}
	if out == nil {
		out = []nostr.Event{}
	}
	return out, nil
}

// ParseCount parses a {"count": n} object (the POST /count reply).
func ParseCount(b []byte) (int64, error) {
	s := wire.New(b)
	s.WS()
	n, err := wire.CountObject(&s)
	if err != nil {
		return 0, wrap("count object", err)
	}
	s.WS()
	if !s.AtEnd() {
		return 0, top(&s, "data after the count object")
	}
	return n, nil
}

// wrap marks err as a frame error and says which part of the frame it is in.
func wrap(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrFrame, what, err)
}

// top marks a frame-level error at the scanner's position.
func top(s *wire.Scanner, msg string) error { return fmt.Errorf("%w: %w", ErrFrame, s.Fail(msg)) }
