package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/buzzload/buzzload/engine"
)

// The first SIGINT/SIGTERM always ends the process within a bound (issue 43
// M2): during the test it stops the load gracefully (teardown, at most
// teardownTimeout, and handleSummary still run) and a second signal exits at
// once, as in k6; whatever still holds the process after stopBound, or
// after endBound once only the run's files are left to write, is cut short
// with exit 105.
const (
	stopBound = 4 * time.Minute
	endBound  = 5 * time.Second
)

// stopOnSignals handles the run's signals until finished is closed.
func stopOnSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, ended, finished <-chan struct{}, stderr io.Writer) {
	select {
	case <-sigs:
	case <-finished:
		return
	}
	bound := stopBound
	select {
	case <-ended:
		bound = endBound
		fmt.Fprintf(stderr, "buzzload run: signal while writing the run's files: exiting within %s (a second signal exits at once)\n", bound)
	default:
		fmt.Fprintf(stderr, "buzzload run: stopping the test (teardown and the summary still run, at most %s; a second signal exits at once)\n", bound)
	}
	cancel(engine.ErrSignal)
	hard := time.NewTimer(bound)
	defer hard.Stop()
	select {
	case <-sigs:
		fmt.Fprintln(stderr, "buzzload run: second signal, exiting at once")
	case <-hard.C:
		fmt.Fprintf(stderr, "buzzload run: still not done %s after the signal, exiting\n", bound)
	case <-finished:
		return
	}
	os.Exit(engine.ExitExternalAbort)
}
