package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/jshost"
	"github.com/buzzload/buzzload/engine/restapi"
)

// ExitAPIFailed is k6's exit code when the REST API cannot start at an
// address given explicitly (docs/k6-compat.md §4.5).
const ExitAPIFailed = 106

// defaultAPIAddress is none: k6 v2 serves its REST API only when
// --address (or K6_ADDRESS) names one (v1 listened on localhost:6565 by
// default; k6-operator's runners pass --address=0.0.0.0:6565).
const defaultAPIAddress = ""

// apiFlags are `run`'s REST API flags, as k6-operator's runners pass them
// (`--address=0.0.0.0:6565 --paused`, `--linger` in PLZ mode).
type apiFlags struct {
	address        string
	paused, linger bool
}

func (a *apiFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&a.address, "address", "a", defaultAPIAddress, `address for k6's REST API (GET/PATCH /v1/status, /v1/metrics, /v1/setup, ...), e.g. localhost:6565; the server is disabled when not set [K6_ADDRESS]`)
	fs.BoolVarP(&a.paused, "paused", "p", false, "initialise the VUs, then wait for a resume through the REST API before setup and the start [K6_PAUSED]")
	fs.BoolVarP(&a.linger, "linger", "l", false, "after the test, keep the REST API up until a signal or a stop through it [K6_LINGER]")
}

// resolveAPI is the flags over their K6_* variables.
func resolveAPI(a apiFlags, fs *pflag.FlagSet, environ []string) (address string, explicit, paused, linger bool, err error) {
	lookup := lookupFrom(environ)
	address, paused, linger = a.address, a.paused, a.linger
	explicit = fs.Changed("address")
	if v, ok := lookup("K6_ADDRESS"); ok && !explicit {
		address, explicit = v, true
	}
	for _, b := range []struct {
		flag, env string
		dst       *bool
	}{{"paused", "K6_PAUSED", &paused}, {"linger", "K6_LINGER", &linger}} {
		if v, ok := lookup(b.env); ok && !fs.Changed(b.flag) {
			if *b.dst, err = strconv.ParseBool(v); err != nil {
				return "", false, false, false, optErr("%s %q: want true or false", b.env, v)
			}
		}
	}
	return address, explicit, paused, linger, nil
}

// startAPI creates the run's control and serves the REST API on the
// address. A default address that is taken is a warning (k6 v1); an
// explicit one is exit 106. stop shuts the server down.
func startAPI(a apiFlags, fs *pflag.FlagSet, environ []string, stderr io.Writer) (ctl *engine.Control, linger bool, stop func(), err error) {
	address, explicit, paused, linger, err := resolveAPI(a, fs, environ)
	if err != nil {
		return nil, false, nil, err
	}
	stop = func() {}
	if address == "" && !paused {
		return nil, linger, stop, nil
	}
	ctl = engine.NewControl(paused)
	if address == "" {
		return ctl, linger, stop, nil
	}
	ln, err := net.Listen("tcp", address)
	if err != nil {
		if explicit {
			return nil, false, nil, &engine.RunError{Code: ExitAPIFailed, Err: fmt.Errorf("the REST API could not start: %w", err)}
		}
		jshost.NewLogger(stderr, jshost.LevelInfo).Log(jshost.LevelWarn, "the REST API could not start; running without it: "+err.Error())
		return ctl, linger, stop, nil
	}
	// Only requests addressed to this API, never from a web page; slow
	// bodies and idle connections are cut (issue 30 F2, F7; docs/security.md).
	names := []string{}
	if h, _, err := net.SplitHostPort(address); err == nil {
		names = append(names, h)
	}
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	srv := &http.Server{Handler: restapi.Guard(restapi.Handler(ctl), names...),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ctl, linger, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			_ = srv.Close()
		}
	}, nil
}

// lingerAfter keeps the process (and its REST API) up after the test until
// a signal (ctx) or a stop through the API, as k6's --linger does.
func lingerAfter(ctx context.Context, ctl *engine.Control, stderr io.Writer) {
	jshost.NewLogger(stderr, jshost.LevelInfo).Log(jshost.LevelInfo, "Linger set; waiting for Ctrl+C or a stop through the REST API (PATCH /v1/status stopped:true)...")
	var stopped <-chan struct{}
	if ctl != nil {
		stopped = ctl.Stopped()
	}
	select {
	case <-ctx.Done():
	case <-stopped:
	}
}
