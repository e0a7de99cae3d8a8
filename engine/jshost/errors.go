package jshost

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/sobek"
)

// ScriptError is an uncaught exception (or a syntax error) in script code.
// In init, setup or teardown it ends the run with exit code 107.
type ScriptError struct {
	Phase string // "init", "setup", "teardown", "iteration", "handleSummary"
	Err   error
}

func (e *ScriptError) Error() string { return e.Err.Error() }
func (e *ScriptError) Unwrap() error { return e.Err }

// AbortError is test.abort(): the run stops, exit code 108.
type AbortError struct{ Reason string }

func (e *AbortError) Error() string {
	if e.Reason == "" {
		return "test aborted"
	}
	return "test aborted: " + e.Reason
}

// TimeoutError is a setup, teardown or handleSummary call that ran past its
// timeout (exit 100, 101; handleSummary's ends nothing in k6 v2.2).
type TimeoutError struct {
	Phase   string
	Timeout time.Duration
	// Where the script was when it was stopped ("handleSummary
	// (file:///…:3:77(8))"), "" if unknown.
	Where string
}

// Error is k6 v2.2.0's text (observed): "setup() execution timed out after
// 1 seconds".
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s() execution timed out after %.f seconds", e.Phase, e.Timeout.Seconds())
}

// Hint is the log line's hint k6 v2.2.0 gives with it (observed).
func (e *TimeoutError) Hint() string {
	return "You can increase the time limit via the " + e.Phase + "Timeout option"
}

// errInterrupted marks a VU interrupted because its context ended.
var errInterrupted = errors.New("interrupted")

// jsError turns a sobek error into one whose message names the position
// (file:line:column) and, for exceptions, carries the JS stack.
func jsError(err error) error {
	if err == nil {
		return nil
	}
	var ie *sobek.InterruptedError
	if errors.As(err, &ie) {
		inner, ok := ie.Value().(error)
		if !ok {
			inner = errInterrupted
		}
		if _, at, found := strings.Cut(ie.Error(), " at "); found && errors.Is(inner, errInterrupted) {
			return &interruptedAt{err: inner, where: at}
		}
		return inner
	}
	var ex *sobek.Exception
	if errors.As(err, &ex) {
		if inner := ex.Unwrap(); inner != nil {
			var ab *AbortError
			if errors.As(inner, &ab) {
				return ab
			}
		}
		return &jsException{ex: ex}
	}
	return err
}

// jsException keeps the exception's value and stack for logging.
type jsException struct{ ex *sobek.Exception }

func (e *jsException) Error() string {
	if o, ok := e.ex.Value().(*sobek.Object); ok {
		if st := o.Get("stack"); st != nil && !sobek.IsUndefined(st) && !sobek.IsNull(st) {
			s := strings.TrimRight(st.String(), "\n")
			if s != "" {
				return cleanStack(s)
			}
		}
	}
	return cleanStack(strings.TrimRight(e.ex.String(), "\n"))
}

// goFrame matches a stack frame of a Go function called from JS, named by
// its Go symbol ("github.com/x/y.(*T).fail-fm (native)").
var goFrame = regexp.MustCompile(`at [\w./*()-]+\.(?:\(\*?\w+\)\.)?(\w+?)(?:-fm)? \(native\)`)

// cleanStack shortens Go frames to the bare function name, so a script's
// trace shows "at fail (native)" rather than our package paths.
func cleanStack(s string) string {
	return goFrame.ReplaceAllString(s, "at $1 (native)")
}

func (e *jsException) Unwrap() error { return e.ex }

// valueError describes a thrown or rejected JS value.
func valueError(v sobek.Value) error {
	if v == nil {
		return errors.New("undefined")
	}
	if ex, ok := v.Export().(error); ok {
		return jsError(ex)
	}
	if o, ok := v.(*sobek.Object); ok {
		if st := o.Get("stack"); st != nil && !sobek.IsUndefined(st) && st.String() != "" {
			return errors.New(strings.TrimRight(st.String(), "\n"))
		}
	}
	return errors.New(v.String())
}

func typeName(v sobek.Value) string {
	if v == nil || sobek.IsUndefined(v) {
		return "undefined"
	}
	if sobek.IsNull(v) {
		return "null"
	}
	if v.ExportType() != nil {
		return v.ExportType().String()
	}
	return strconv.Quote(v.String())
}

// interruptedAt is an interrupted call with where the script was then
// (k6 v2.2.0 logs "context canceled at handleSummary (file:///…)").
type interruptedAt struct {
	err   error
	where string
}

func (e *interruptedAt) Error() string { return e.err.Error() }
func (e *interruptedAt) Unwrap() error { return e.err }
