package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The four gateway profiles (testdata/profiles, plain k6 scripts from
// ../shared/seeds/gateway-LOAD-PROFILES.md, shortened) run unchanged
// against a loopback gateway stand-in and pass their thresholds; p1 against
// an endpoint slower than its p(95) bound fails them with 99, so the
// thresholds judge real http_req_* samples.
func TestGatewayProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ~25 s of load")
	}
	cases := []struct {
		script, path string
		exit         int
	}{
		{"p1-baseline.js", "/echo", 0},
		{"p2-sustained.js", "/echo", 0},
		{"p3-ramp.js", "/echo", 0},
		{"p4-stress.js", "/echo", 0},
		{"p1-baseline.js", "/delay/250", 99},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.script, ".js")+c.path, func(t *testing.T) {
			srv := newTestHTTPServer(t)
			var out, errb bytes.Buffer
			args := []string{"run", "-q", "-e", "TARGET=" + srv.plain.URL + c.path, filepath.Join("testdata", "profiles", c.script)}
			code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb})
			if code != c.exit {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.exit, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), "http_reqs") || !strings.Contains(out.String(), "█ THRESHOLDS") {
				t.Errorf("summary lacks http_reqs or thresholds:\n%s", out.String())
			}
		})
	}
}
