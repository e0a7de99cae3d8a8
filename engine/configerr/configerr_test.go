package configerr

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorNamesItsPlace(t *testing.T) {
	base := errors.New("must be above 0")
	cases := []struct {
		e    *Error
		want string
	}{
		{New(base), "must be above 0"},
		{&Error{Key: "duration", Err: base}, "options.duration: must be above 0"},
		{&Error{Scenario: "s", Err: base}, "scenarios.s: must be above 0"},
		{Errorf("s", "stages[1].target", "must not be negative, got %d", -1), "scenarios.s.stages[1].target: must not be negative, got -1"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	var ce *Error
	wrapped := fmt.Errorf("script options: %w", New(base))
	if !errors.As(wrapped, &ce) || ce.ExitCode() != 104 || !errors.Is(wrapped, base) {
		t.Fatalf("a wrapped Error is still found and unwraps to its cause: %v", wrapped)
	}
}
