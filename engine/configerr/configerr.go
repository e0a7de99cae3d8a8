// Package configerr is the one error type for invalid configuration: an
// option, a scenario or an export that makes k6 exit 104
// (docs/k6-compat.md §4.5). The executor, the script host and the engine
// all return it, so the exit code is decided in one place.
package configerr

import "fmt"

// Exit is k6's exit code for invalid configuration.
const Exit = 104

// Error is one invalid configuration value. Scenario and Key locate it
// (both empty for a whole layer or export); Err says what is wrong.
type Error struct {
	Scenario string // "" for the top-level options
	Key      string // e.g. "stages[1].target"
	Err      error
}

// New is an Error with no location.
func New(err error) *Error { return &Error{Err: err} }

// Errorf is an Error at scenario and key with a formatted message.
func Errorf(scenario, key, format string, args ...any) *Error {
	return &Error{Scenario: scenario, Key: key, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string {
	switch {
	case e.Scenario == "" && e.Key == "":
		return e.Err.Error()
	case e.Scenario == "":
		return fmt.Sprintf("options.%s: %s", e.Key, e.Err)
	case e.Key == "":
		return fmt.Sprintf("scenarios.%s: %s", e.Scenario, e.Err)
	}
	return fmt.Sprintf("scenarios.%s.%s: %s", e.Scenario, e.Key, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is 104.
func (e *Error) ExitCode() int { return Exit }
