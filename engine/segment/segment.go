// Package segment implements k6-compatible execution segments: parsing
// `--execution-segment` and `--execution-segment-sequence`, and the striping
// that splits VU numbers, iterations and arrival-rate events between the
// instances of a distributed run so that, together, they do exactly what a
// single instance would (docs/k6-compat.md §3).
//
// Everything here is exact rational arithmetic or integer arithmetic; nothing
// reads a clock.
package segment

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Segment is the half-open interval (From, To] of the whole run, 0 ≤ From < To ≤ 1.
type Segment struct {
	From, To *big.Rat
}

// Full is the segment 0:1, a run that is not split.
func Full() Segment { return Segment{From: new(big.Rat), To: big.NewRat(1, 1)} }

// IsFull reports whether s covers the whole run.
func (s Segment) IsFull() bool { return s.From.Sign() == 0 && s.To.Cmp(big.NewRat(1, 1)) == 0 }

// Length is To − From.
func (s Segment) Length() *big.Rat { return new(big.Rat).Sub(s.To, s.From) }

// String prints the segment as "from:to" with exact fractions.
func (s Segment) String() string { return s.From.RatString() + ":" + s.To.RatString() }

// ParseSegment parses `a:b`, a bare `x` (meaning `0:x`) or "" (meaning `0:1`).
// Each end may be an integer percentage (`25%`), a decimal (`0.25`) or a
// fraction (`1/4`); forms may be mixed.
func ParseSegment(s string) (Segment, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Full(), nil
	}
	fromText, toText, hasColon := strings.Cut(s, ":")
	if !hasColon {
		fromText, toText = "0", s
	}
	from, err := parsePoint(fromText)
	if err != nil {
		return Segment{}, fmt.Errorf("execution segment %q: %w", s, err)
	}
	to, err := parsePoint(toText)
	if err != nil {
		return Segment{}, fmt.Errorf("execution segment %q: %w", s, err)
	}
	if from.Cmp(to) >= 0 {
		return Segment{}, fmt.Errorf("execution segment %q: start %s must be below end %s", s, from.RatString(), to.RatString())
	}
	return Segment{From: from, To: to}, nil
}

// parsePoint reads one end of a segment or one point of a sequence, in [0,1].
func parsePoint(text string) (*big.Rat, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("empty value")
	}
	var r *big.Rat
	if p, ok := strings.CutSuffix(text, "%"); ok {
		// k6 accepts integer percentages only.
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("'%s' is not a valid percentage", text)
		}
		r = big.NewRat(n, 100)
	} else {
		var ok bool
		r, ok = new(big.Rat).SetString(text)
		if !ok {
			return nil, fmt.Errorf("'%s' is not a number, fraction or percentage", text)
		}
	}
	if r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		return nil, fmt.Errorf("'%s' is outside [0, 1]", text)
	}
	return r, nil
}

// Sequence is the list of points p0 < p1 < … < pn that defines the segments
// (p0,p1], (p1,p2], … of a distributed run.
type Sequence []*big.Rat

// ParseSequence parses a comma-separated `--execution-segment-sequence`.
// An empty string gives an empty sequence (no sequence given).
func ParseSequence(s string) (Sequence, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) < 2 {
		return nil, fmt.Errorf("execution segment sequence %q: needs at least 2 points", s)
	}
	seq := make(Sequence, 0, len(parts))
	for i, p := range parts {
		r, err := parsePoint(p)
		if err != nil {
			return nil, fmt.Errorf("execution segment sequence %q: point %d: %w", s, i+1, err)
		}
		if i > 0 && r.Cmp(seq[i-1]) <= 0 {
			return nil, fmt.Errorf("execution segment sequence %q: point %d (%s) is not above the previous one (%s)", s, i+1, r.RatString(), seq[i-1].RatString())
		}
		seq = append(seq, r)
	}
	return seq, nil
}

// String prints the points comma-separated with exact fractions.
func (q Sequence) String() string {
	parts := make([]string, len(q))
	for i, p := range q {
		parts[i] = p.RatString()
	}
	return strings.Join(parts, ",")
}

// filled returns the sequence the run actually uses: with no sequence, the
// segment's own ends plus 0 and 1 (the §3.1 pitfall); otherwise the given
// points with 0 and 1 added when missing.
func filled(seg Segment, seq Sequence) Sequence {
	zero, one := new(big.Rat), big.NewRat(1, 1)
	var pts Sequence
	if len(seq) == 0 {
		pts = Sequence{zero, seg.From, seg.To, one}
	} else {
		pts = append(Sequence{zero}, seq...)
		pts = append(pts, one)
	}
	out := pts[:0:0]
	for _, p := range pts {
		if len(out) > 0 && out[len(out)-1].Cmp(p) == 0 {
			continue
		}
		out = append(out, p)
	}
	return out
}
