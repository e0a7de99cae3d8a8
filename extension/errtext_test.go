package extension

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
