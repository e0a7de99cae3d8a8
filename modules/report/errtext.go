package report

import (
	"regexp"
	"sort"
)

// Error texts are grouped after stripping what differs between two
// occurrences of the same failure: event and key ids, durations and other
// numbers, so "no response within 30s" and an OK for another event id
// count as one text an operator can act on (issue 13).
var (
	durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(ns|us|µs|ms|s|m|h)(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))*\b`)
	hexIDRE    = regexp.MustCompile(`\b[0-9a-fA-F]{16,}\b`)
	numberRE   = regexp.MustCompile(`\d+(\.\d+)*`)
	// A relay frame quoted after a bad-frame error (wire.Quote) is a sample
	// of the failure, not its name: its subscription id, content and the
	// place its length limit cut it differ between frames of one flood and
	// split it into rows (issue 30, reliability.md). Only its verb stays.
	framePreviewRE = regexp.MustCompile(`"\[\\"([A-Za-z_-]{1,16})\\"(?:[^"\\]|\\.)*"…?$`)
	// Any other quoted text cut at its limit ends inside a token (an id too
	// short to look like one, part of a word): that fragment goes.
	cutTailRE = regexp.MustCompile(`[^\s"\\,:{}\[\]]*"…$`)
)

// NormaliseError strips ids, durations and numbers from an error text.
func NormaliseError(text string) string {
	text = framePreviewRE.ReplaceAllString(text, `"[\"$1\",…]"`)
	text = cutTailRE.ReplaceAllString(text, `"…`)
	text = hexIDRE.ReplaceAllString(text, "<id>")
	text = durationRE.ReplaceAllString(text, "<d>")
	return numberRE.ReplaceAllString(text, "<n>")
}

// Bounds of the error texts: an operation keeps at most maxErrorTexts
// distinct texts per cell (the rest counts as "other"), and the report and
// summary list the topErrorTexts most frequent plus "other".
const (
	maxErrorTexts = 64
	topErrorTexts = 10
	// OtherErrors is the text under which the less frequent texts count.
	OtherErrors = "other"
)

// errorCounts counts normalised error texts, bounded.
type errorCounts struct {
	texts map[string]int64
	other int64
}

func (e *errorCounts) add(text string, n int64) {
	if text == "" || n == 0 {
		return
	}
	if _, ok := e.texts[text]; !ok && len(e.texts) >= maxErrorTexts {
		e.other += n
		return
	}
	if e.texts == nil {
		e.texts = map[string]int64{}
	}
	e.texts[text] += n
}

func (e *errorCounts) merge(b *errorCounts) {
	for t, n := range b.texts {
		e.add(t, n)
	}
	e.other += b.other
}

// ErrorText is one normalised error text and how often it occurred.
type ErrorText struct {
	Text  string `json:"text"`
	Count int64  `json:"count"`
}

// top lists the most frequent texts (ties by text), then "other" for the
// rest.
func (e *errorCounts) top(n int) []ErrorText {
	out := make([]ErrorText, 0, len(e.texts))
	for t, c := range e.texts {
		out = append(out, ErrorText{t, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Text < out[j].Text
	})
	other := e.other
	if len(out) > n {
		for _, t := range out[n:] {
			other += t.Count
		}
		out = out[:n]
	}
	if other > 0 {
		out = append(out, ErrorText{OtherErrors, other})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
