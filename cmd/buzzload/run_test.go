package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
)

// A conformance case is a script in testdata/conformance whose leading
// comment lines state how `buzzload run` must end:
//
//	// args: flags before the script ({dir} = testdata dir, {tmp} = temp dir)
//	// env: KEY=VALUE ... (the process environment)
//	// exit: code
//	// stdout: / stderr: text that must appear; !stdout: / !stderr: must not
//	// stdout-empty:
//	// count-stderr: text = n
//	// iterations: n (read from a summary export)
//	// file: path = exact content; file-contains: path = text
type conformance struct {
	args, env           []string
	exit                int
	want, notWant       map[string][]string
	stdoutEmpty         bool
	counts              map[string]int
	iterations          int
	files, fileContains map[string]string
}

func parseCase(t *testing.T, path, dir, tmp string) conformance {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := conformance{exit: -1, iterations: -1, want: map[string][]string{}, notWant: map[string][]string{},
		counts: map[string]int{}, files: map[string]string{}, fileContains: map[string]string{}}
	sub := strings.NewReplacer("{dir}", dir, "{tmp}", tmp)
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "//") {
			break
		}
		key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "//")), ":")
		if !ok {
			continue
		}
		val = sub.Replace(strings.TrimSpace(val))
		switch key {
		case "args":
			c.args = strings.Fields(val)
		case "env":
			c.env = strings.Fields(val)
		case "exit":
			c.exit, _ = strconv.Atoi(val)
		case "stdout", "stderr":
			c.want[key] = append(c.want[key], val)
		case "!stdout", "!stderr":
			c.notWant[key[1:]] = append(c.notWant[key[1:]], val)
		case "stdout-empty":
			c.stdoutEmpty = true
		case "count-stderr":
			text, n, _ := strings.Cut(val, " = ")
			c.counts[text], _ = strconv.Atoi(n)
		case "iterations":
			c.iterations, _ = strconv.Atoi(val)
		case "file", "file-contains":
			p, text, _ := strings.Cut(val, " = ")
			if key == "file" {
				c.files[p] = text
			} else {
				c.fileContains[p] = text
			}
		}
	}
	if c.exit < 0 {
		t.Fatalf("%s: no exit: line", path)
	}
	return c
}

func TestConformance(t *testing.T) {
	dir, err := filepath.Abs("testdata/conformance")
	if err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob(filepath.Join(dir, "*.js"))
	if len(scripts) == 0 {
		t.Fatal("no conformance scripts")
	}
	for _, script := range scripts {
		t.Run(strings.TrimSuffix(filepath.Base(script), ".js"), func(t *testing.T) {
			t.Parallel()
			runCase(t, dir, script, nil)
		})
	}
}

// runCase runs one conformance script with extra leading args and checks
// what its header comment asks.
func runCase(t *testing.T, dir, script string, extra []string) {
	t.Helper()
	tmp := t.TempDir()
	c := parseCase(t, script, dir, tmp)
	args := append(append([]string{"run", "-q"}, extra...), c.args...)
	export := filepath.Join(tmp, "conformance-export.json")
	if c.iterations >= 0 {
		args = append(args, "--summary-export", export)
	}
	args = append(args, script)
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, cliEnv{Stdout: &out, Stderr: &errb, Env: c.env})
	stdout, stderr := out.String(), errb.String()
	if code != c.exit {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.exit, stdout, stderr)
	}
	streams := map[string]string{"stdout": stdout, "stderr": stderr}
	for s, texts := range c.want {
		for _, text := range texts {
			if !strings.Contains(streams[s], text) {
				t.Errorf("%s lacks %q:\n%s", s, text, streams[s])
			}
		}
	}
	for s, texts := range c.notWant {
		for _, text := range texts {
			if strings.Contains(streams[s], text) {
				t.Errorf("%s has %q:\n%s", s, text, streams[s])
			}
		}
	}
	if c.stdoutEmpty && stdout != "" {
		t.Errorf("stdout should be empty, got %q", stdout)
	}
	for text, n := range c.counts {
		if got := strings.Count(stderr, text); got != n {
			t.Errorf("stderr has %q %d times, want %d:\n%s", text, got, n, stderr)
		}
	}
	if c.iterations >= 0 {
		b, err := os.ReadFile(export)
		if err != nil {
			t.Fatal(err)
		}
		var ex struct {
			Metrics map[string]map[string]any `json:"metrics"`
		}
		if err := json.Unmarshal(b, &ex); err != nil {
			t.Fatal(err)
		}
		if got := ex.Metrics["iterations"]["count"]; got != float64(c.iterations) {
			t.Errorf("iterations = %v, want %d", got, c.iterations)
		}
	}
	for p, want := range c.files {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", p, b, err, want)
		}
	}
	for p, want := range c.fileContains {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s = %q (%v), want it to contain %q", p, b, err, want)
		}
	}
}

func TestRunSignalExits105AndRunsTeardown(t *testing.T) {
	script := filepath.Join(t.TempDir(), "long.js")
	src := `import { sleep } from "k6";
export const options = { vus: 1, duration: "30s" };
let said = false;
export default function () { if (!said) { console.log("iterating"); said = true; } sleep(0.01); }
export function teardown() { console.log("teardown ran"); }`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- dispatch(context.Background(), []string{"run", "-q", script}, cliEnv{Stdout: &out, Stderr: &errb, Signals: sigs})
	}()
	waitfor.Until(t, "the run's first iteration", 10*time.Second, func() bool { return strings.Contains(errb.String(), "iterating") })
	sigs <- syscall.SIGINT
	select {
	case code := <-done:
		if code != 105 {
			t.Fatalf("exit %d, want 105; stderr:\n%s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop after SIGINT")
	}
	if !strings.Contains(errb.String(), "teardown ran") {
		t.Fatalf("teardown did not run after the signal:\n%s", errb.String())
	}
}

func TestRunFlagErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown flag", []string{"run", "--frobnicate", "x.js"}, 255, "unknown flag"},
		{"no script", []string{"run"}, 255, "one script"},
		{"bad summary mode", []string{"run", "--summary-mode=loud", "x.js"}, 255, "invalid summary mode \"loud\" (--summary-mode"}, // k6 v2.2: 255
		{"bad env flag", []string{"run", "-e", "1BAD=x", "x.js"}, 104, "1BAD"},
		{"bad tag", []string{"run", "--tag", "novalue", "x.js"}, 104, "novalue"},
		{"bad stage", []string{"run", "-s", "10s", "x.js"}, 104, "stage"},
		{"missing script", []string{"run", "/nonexistent/x.js"}, 255, "x.js"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Fatalf("code %d, stderr %q; want %d and %q", code, errs, c.code, c.want)
			}
		})
	}
}

func TestEnvLayerOrder(t *testing.T) {
	// K6_ITERATIONS over the script, -i over K6_ITERATIONS.
	f := newRunFlags(&bytes.Buffer{})
	if err := f.fs.Parse([]string{"-i", "7", "s.js"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := buildRunConfig(f, "s.js", cliEnv{Env: []string{"K6_ITERATIONS=3", "K6_VUS=2", "K6_TAGS=a:b,c:d", "K6_NO_THRESHOLDS=true"}})
	if err != nil {
		t.Fatal(err)
	}
	if *cfg.Env.Exec.Iterations != 3 || *cfg.CLI.Exec.Iterations != 7 || *cfg.Env.Exec.VUs != 2 {
		t.Fatalf("env %+v cli %+v", cfg.Env.Exec, cfg.CLI.Exec)
	}
	if cfg.Env.Options.Tags["c"] != "d" || !cfg.NoThresholds {
		t.Fatalf("env options %+v, noThresholds %v", cfg.Env.Options, cfg.NoThresholds)
	}
	if cfg.CLI.Exec.VUs != nil {
		t.Fatal("-u's default must count as unset")
	}
}

func TestStartAtHoldsTheRunUntilThen(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.js")
	src := `export function setup() { console.log("setup at=" + Date.now()); }
export default function () {}`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(400 * time.Millisecond)
	code, _, errs := runCLI(t, "run", "-q", "--start-at", at.Format(time.RFC3339Nano), script)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	i := strings.Index(errs, "setup at=")
	if i < 0 {
		t.Fatalf("no setup line:\n%s", errs)
	}
	ms, err := strconv.ParseInt(strings.TrimRight(strings.Fields(errs[i+len("setup at="):])[0], `"`), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if ms < at.UnixMilli() {
		t.Fatalf("setup ran at %d, before --start-at %d", ms, at.UnixMilli())
	}
	if !strings.Contains(errs, "waiting") {
		t.Fatalf("no waiting notice:\n%s", errs)
	}
}

func TestParseStartAt(t *testing.T) {
	if got, err := parseStartAt("1800000000.5"); err != nil || got.UnixMilli() != 1800000000500 {
		t.Fatalf("unix seconds: %v %v", got, err)
	}
	if got, err := parseStartAt("2026-01-02T15:04:05Z"); err != nil || got.Unix() != 1767366245 {
		t.Fatalf("rfc3339: %v %v", got, err)
	}
	for _, bad := range []string{"", "soon", "-5", "2026-01-02"} {
		if _, err := parseStartAt(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
