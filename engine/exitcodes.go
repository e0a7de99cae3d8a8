package engine

import (
	"errors"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/jshost/eventloop"
)

// Exit codes (docs/k6-compat.md §4.5).
const (
	ExitOK = 0
	// ExitCloudTestRunFailed: a test run on the cloud's own k6 (`cloud run`
	// without --local-execution) that the cloud says failed.
	ExitCloudTestRunFailed = 97
	ExitThresholdsFailed   = 99
	ExitSetupTimeout       = 100
	ExitTeardownTimeout    = 101
	ExitGenericTimeout     = 102
	ExitStoppedByAPI       = 103
	ExitInvalidConfig      = configerr.Exit
	ExitExternalAbort      = 105
	ExitScriptException    = 107
	ExitScriptAborted      = 108
	ExitGoPanic            = 109
	ExitMarkedAsFailed     = 110
	ExitGeneric            = 255
)

// RunError is an error with the exit code it ends the run with.
type RunError struct {
	Code int
	Err  error
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// ExitCode maps an error to k6's exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var re *RunError
	if errors.As(err, &re) {
		return re.Code
	}
	var ab *jshost.AbortError
	if errors.As(err, &ab) {
		return ExitScriptAborted
	}
	var pe *eventloop.PanicError
	if errors.As(err, &pe) {
		return ExitGoPanic
	}
	var to *jshost.TimeoutError
	if errors.As(err, &to) {
		switch to.Phase {
		case "setup":
			return ExitSetupTimeout
		case "teardown":
			return ExitTeardownTimeout
		}
		return ExitGenericTimeout
	}
	var ce *configerr.Error
	if errors.As(err, &ce) {
		return ExitInvalidConfig
	}
	var se *jshost.ScriptError
	var syn *jshost.SyntaxError
	if errors.As(err, &se) || errors.As(err, &syn) {
		return ExitScriptException
	}
	return ExitGeneric
}

// OptionsError is configerr.Error under its former name, the same type.
//
// Deprecated: use configerr.Error (configerr.New).
type OptionsError = configerr.Error
