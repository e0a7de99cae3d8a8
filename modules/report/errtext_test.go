package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr/wire"
	"github.com/buzzload/buzzload/modules/relayclient"
)

var timeZero time.Time

func TestNormaliseErrorStripsIDsNumbersDurations(t *testing.T) {
	cases := map[string]string{
		"POST /query: no response within 1m0s":                                            "POST /query: no response within <d>",
		"POST /query: no response within 250ms":                                           "POST /query: no response within <d>",
		"publish 3f1c0e6a9b7d5e4f3f1c0e6a9b7d5e4f3f1c0e6a9b7d5e4f3f1c0e6a9b7d5e4f: no OK": "publish <id>: no OK",
		"dial tcp 127.0.0.1:54321: connect: connection refused":                           "dial tcp <n>:<n>: connect: connection refused",
		"HTTP 503: retry after 2.5 s":                                                     "HTTP <n>: retry after <n> s",
		"auth-required: verification failed":                                              "auth-required: verification failed",
	}
	for in, want := range cases {
		if got := NormaliseError(in); got != want {
			t.Errorf("NormaliseError(%q) = %q, want %q", in, got, want)
		}
	}
}

// Bad frames of one flood, whose quoted previews are cut at different
// places of their ids and words, are one text (issue 30: a flood made three
// rows). Fails without cutTailRE.
func TestNormaliseErrorGroupsCutFramePreviews(t *testing.T) {
	seen := map[string]bool{}
	for _, sub := range []string{"a", "sub-1", "sub-12345", "subscription-x"} {
		for _, content := range []string{"hello", "zqxwvutsrponmlkjihgfedcba"} {
			frame := fmt.Sprintf(`["EVENT",%q,{"id":"%s","pubkey":"%s","content":%q}]`, sub,
				strings.Repeat("ab12", 16), strings.Repeat("9f3e", 16), content)
			seen[NormaliseError("EVENT for a subscription id that is not open: "+wire.Quote([]byte(frame)))] = true
		}
	}
	if len(seen) != 1 {
		t.Errorf("one failure, %d texts: %v", len(seen), seen)
	}
	if got, want := NormaliseError(`EOSE for a subscription id that is not open: "[\"EOSE\",\"s9\"]"`),
		`EOSE for a subscription id that is not open: "[\"EOSE\",…]"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Quoted HTTP bodies keep what tells them apart; a cut one loses only
	// the fragment its limit left.
	if a, b := NormaliseError(`POST /query: HTTP 500: "{\"error\":\"x\"}"`), NormaliseError(`POST /query: HTTP 500: "{\"error\":\"y\"}"`); a == b {
		t.Errorf("different bodies merged: %q", a)
	}
	if a, b := NormaliseError(`HTTP 500: "{\"error\":\"database is locke"…`), NormaliseError(`HTTP 500: "{\"error\":\"database is lo"…`); a != b {
		t.Errorf("one body cut at two places: %q, %q", a, b)
	}
}

// Texts that differ only in ids and numbers count as one; the report keeps
// the 10 most frequent with their counts and sums the rest as "other", and
// a cell never holds more than maxErrorTexts distinct texts.
func TestErrorTextsTopTenAndOther(t *testing.T) {
	o := newOpAgg()
	for i := 0; i < 30; i++ {
		o.add(relayclient.Result{Outcome: relayclient.OutcomeError, Error: fmt.Sprintf("POST /events: HTTP 500: event %064x failed", i)}, timeZero)
	}
	for k := 0; k < 14; k++ { // 14 more distinct texts, k+1 times each
		for i := 0; i <= k; i++ {
			o.add(relayclient.Result{Outcome: relayclient.OutcomeError, Error: "failure kind " + strings.Repeat("x", k+1)}, timeZero)
		}
	}
	r := o.report()
	if len(r.ErrorTexts) != topErrorTexts+1 {
		t.Fatalf("%d texts: %+v", len(r.ErrorTexts), r.ErrorTexts)
	}
	if r.ErrorTexts[0] != (ErrorText{"POST /events: HTTP <n>: event <id> failed", 30}) {
		t.Errorf("first %+v", r.ErrorTexts[0])
	}
	if r.ErrorTexts[1] != (ErrorText{"failure kind xxxxxxxxxxxxxx", 14}) {
		t.Errorf("second %+v", r.ErrorTexts[1])
	}
	// Shown: 30 and 14..6 (9 texts); other: 5+4+3+2+1.
	if last := r.ErrorTexts[topErrorTexts]; last != (ErrorText{OtherErrors, 15}) {
		t.Errorf("other %+v", last)
	}
	var sum int64
	for _, e := range r.ErrorTexts {
		sum += e.Count
	}
	if sum != r.Errors {
		t.Errorf("texts count %d, errors %d", sum, r.Errors)
	}

	b := newOpAgg()
	for i := 0; i < 3*maxErrorTexts; i++ {
		b.add(relayclient.Result{Outcome: relayclient.OutcomeError, Error: "refused: " + strings.Repeat("y", i%200+1)}, timeZero)
	}
	if len(b.errTexts.texts) > maxErrorTexts || b.errTexts.other != 2*maxErrorTexts {
		t.Errorf("kept %d distinct, other %d", len(b.errTexts.texts), b.errTexts.other)
	}
	if !strings.Contains(b.report().ErrorTexts[topErrorTexts].Text, OtherErrors) {
		t.Error("no other entry")
	}
}
