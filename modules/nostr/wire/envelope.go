package wire

import (
	"errors"
	"fmt"
	"strconv"
)

// The nine NIP-01 verbs (with NIP-42's AUTH and NIP-45's COUNT), each
// defined once: one small type per verb, as go-nostr's envelopes.go has
// them, with an append-style encoder and a scanner of the elements after
// the label. The client, the embedded relay and the plan's frame sizes all
// build their frames here; nothing else writes a frame from a literal.
// Events and filters travel as their JSON (this package sits below
// modules/nostr), so an envelope never decodes what its caller reads in
// place.

// Verb is a frame's label.
type Verb uint8

// The verbs.
const (
	VerbUnknown Verb = iota
	VerbEvent        // client: ["EVENT", event]; relay: ["EVENT", sub, event]
	VerbReq          // client: ["REQ", sub, filter...]
	VerbCount        // client: ["COUNT", sub, filter...]; relay: ["COUNT", sub, {"count": n}]
	VerbClose        // client: ["CLOSE", sub]
	VerbAuth         // client: ["AUTH", event]; relay: ["AUTH", challenge]
	VerbOK           // relay: ["OK", id, accepted, reason]
	VerbEOSE         // relay: ["EOSE", sub]
	VerbClosed       // relay: ["CLOSED", sub, reason]
	VerbNotice       // relay: ["NOTICE", text]
)

var labels = [...]string{VerbUnknown: "unknown", VerbEvent: "EVENT", VerbReq: "REQ", VerbCount: "COUNT", VerbClose: "CLOSE",
	VerbAuth: "AUTH", VerbOK: "OK", VerbEOSE: "EOSE", VerbClosed: "CLOSED", VerbNotice: "NOTICE"}

// String is the verb's label ("unknown" for VerbUnknown).
func (v Verb) String() string {
	if int(v) < len(labels) {
		return labels[v]
	}
	return labels[VerbUnknown]
}

// ParseVerb is the verb a label names (VerbUnknown for any other).
func ParseVerb(label []byte) Verb {
	for v := VerbEvent; int(v) < len(labels); v++ {
		if string(label) == labels[v] {
			return v
		}
	}
	return VerbUnknown
}

// appendHead starts a frame: `["LABEL"`.
func appendHead(dst []byte, v Verb) []byte {
	dst = append(dst, '[', '"')
	dst = append(dst, labels[v]...)
	return append(dst, '"')
}

// AppendEventHead starts an EVENT frame up to its event: `["EVENT",` from a
// client (subID ""), `["EVENT","<sub>",` from a relay. The caller appends
// the event's JSON and `]`: the relay shares one head per subscription and
// the client writes the event in place (EventEnvelope.Append is the whole).
func AppendEventHead(dst []byte, subID string) []byte {
	dst = append(appendHead(dst, VerbEvent), ',')
	if subID != "" {
		dst = append(AppendString(dst, subID), ',')
	}
	return dst
}

// EventEnvelope is an EVENT: a client's publish (SubID "") or a relay's
// delivery on a subscription.
type EventEnvelope struct {
	SubID string
	Event []byte // the event's JSON
}

// Append appends the frame.
func (e EventEnvelope) Append(dst []byte) []byte {
	return append(append(AppendEventHead(dst, e.SubID), e.Event...), ']')
}

// ReqEnvelope is a client's REQ.
type ReqEnvelope struct {
	SubID   string
	Filters []byte // the filters' JSON objects, comma-separated (none: no filter)
}

// Append appends the frame.
func (e ReqEnvelope) Append(dst []byte) []byte {
	return appendSubFilters(dst, VerbReq, e.SubID, e.Filters)
}

func appendSubFilters(dst []byte, v Verb, sub string, filters []byte) []byte {
	dst = AppendString(append(appendHead(dst, v), ','), sub)
	if len(filters) > 0 {
		dst = append(append(dst, ','), filters...)
	}
	return append(dst, ']')
}

// CountEnvelope is NIP-45's COUNT: a client's request (Filters set) or a
// relay's answer (Count).
type CountEnvelope struct {
	SubID   string
	Filters []byte // the request's filters, comma-separated; nil in an answer
	Count   int64  // the answer's count
}

// Append appends the request when Filters is set, else the answer.
func (e CountEnvelope) Append(dst []byte) []byte {
	if e.Filters != nil {
		return appendSubFilters(dst, VerbCount, e.SubID, e.Filters)
	}
	dst = AppendString(append(appendHead(dst, VerbCount), ','), e.SubID)
	dst = strconv.AppendInt(append(dst, `,{"count":`...), e.Count, 10)
	return append(dst, '}', ']')
}

// Scan reads an answer's elements after the label.
func (e *CountEnvelope) Scan(s *Scanner) (err error) {
	if e.SubID, err = s.Str(); err != nil {
		return field("COUNT subscription id", err)
	}
	if err := s.Comma(); err != nil {
		return field("COUNT", err)
	}
	if e.Count, err = countObject(s); err != nil {
		return field("COUNT object", err)
	}
	return nil
}

// CloseEnvelope is a client's CLOSE.
type CloseEnvelope struct{ SubID string }

// Append appends the frame.
func (e CloseEnvelope) Append(dst []byte) []byte {
	return append(AppendString(append(appendHead(dst, VerbClose), ','), e.SubID), ']')
}

// AuthEnvelope is NIP-42's AUTH: a relay's challenge, or a client's signed
// event (Event set).
type AuthEnvelope struct {
	Challenge string
	Event     []byte // the client's event JSON
}

// AppendAuthHead starts a client's AUTH frame up to its event (`["AUTH",`);
// the caller appends the event's JSON and `]`.
func AppendAuthHead(dst []byte) []byte { return append(appendHead(dst, VerbAuth), ',') }

// Append appends the client's frame when Event is set, else the challenge.
func (e AuthEnvelope) Append(dst []byte) []byte {
	if e.Event != nil {
		return append(append(AppendAuthHead(dst), e.Event...), ']')
	}
	return append(AppendString(append(appendHead(dst, VerbAuth), ','), e.Challenge), ']')
}

// Scan reads a challenge after the label.
func (e *AuthEnvelope) Scan(s *Scanner) (err error) {
	if e.Challenge, err = s.Str(); err != nil {
		return field("AUTH challenge", err)
	}
	return nil
}

// OKEnvelope is a relay's OK for an EVENT (or AUTH).
type OKEnvelope struct {
	EventID string
	OK      bool
	Reason  string
}

// Append appends the frame.
func (e OKEnvelope) Append(dst []byte) []byte {
	dst = AppendString(append(appendHead(dst, VerbOK), ','), e.EventID)
	dst = strconv.AppendBool(append(dst, ','), e.OK)
	return append(AppendString(append(dst, ','), e.Reason), ']')
}

// Scan reads the elements after the label (the reason is optional).
func (e *OKEnvelope) Scan(s *Scanner) (err error) {
	if e.EventID, err = s.Str(); err != nil {
		return field("OK event id", err)
	}
	if err := s.Comma(); err != nil {
		return field("OK", err)
	}
	if e.OK, err = s.Bool(); err != nil {
		return field("OK accepted", err)
	}
	if s.More() {
		if e.Reason, err = s.Str(); err != nil {
			return field("OK reason", err)
		}
	}
	return nil
}

// EOSEEnvelope is a relay's end of stored events.
type EOSEEnvelope struct{ SubID string }

// Append appends the frame.
func (e EOSEEnvelope) Append(dst []byte) []byte {
	return append(AppendString(append(appendHead(dst, VerbEOSE), ','), e.SubID), ']')
}

// Scan reads the elements after the label.
func (e *EOSEEnvelope) Scan(s *Scanner) (err error) {
	if e.SubID, err = s.Str(); err != nil {
		return field("EOSE subscription id", err)
	}
	return nil
}

// ClosedEnvelope is a relay's CLOSED.
type ClosedEnvelope struct{ SubID, Reason string }

// Append appends the frame.
func (e ClosedEnvelope) Append(dst []byte) []byte {
	dst = AppendString(append(appendHead(dst, VerbClosed), ','), e.SubID)
	return append(AppendString(append(dst, ','), e.Reason), ']')
}

// Scan reads the elements after the label (the reason is optional).
func (e *ClosedEnvelope) Scan(s *Scanner) (err error) {
	if e.SubID, err = s.Str(); err != nil {
		return field("CLOSED subscription id", err)
	}
	if s.More() {
		if e.Reason, err = s.Str(); err != nil {
			return field("CLOSED reason", err)
		}
	}
	return nil
}

// NoticeEnvelope is a relay's NOTICE.
type NoticeEnvelope struct{ Message string }

// Append appends the frame.
func (e NoticeEnvelope) Append(dst []byte) []byte {
	return append(AppendString(append(appendHead(dst, VerbNotice), ','), e.Message), ']')
}

// Scan reads the elements after the label.
func (e *NoticeEnvelope) Scan(s *Scanner) (err error) {
	if e.Message, err = s.Str(); err != nil {
		return field("NOTICE text", err)
	}
	return nil
}

// FieldError says which part of a frame a scan failed in.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func field(name string, err error) error { return &FieldError{Field: name, Err: err} }

// countObject parses {"count": n, ...} (a COUNT answer, HTTP /count's body).
func countObject(s *Scanner) (int64, error) {
	var n int64
	found := false
	err := s.Object(func(key []byte) (bool, error) {
		if string(key) != "count" {
			return false, nil
		}
		var err error
		n, err = s.Int()
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

// CountObject parses {"count": n} (HTTP /count's body; a COUNT answer's
// third element).
func CountObject(s *Scanner) (int64, error) { return countObject(s) }

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string with JSON.stringify's escaping
// (only `"`, `\` and control characters; what Buzz's serde_json writes
// too). Invalid UTF-8 is copied as is: an event id is computed over the
// bytes sent.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
