// Package k8s holds the Kubernetes example of a distributed run. Its test
// checks the wrapper scripts' arithmetic and plumbing; the manifests were
// not run against a cluster.
package k8s

import (
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/engine/segment"
)

func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no POSIX shell")
	}
	return sh
}

// runScript runs one of the wrapper scripts with env (and nothing else of
// the test's environment except PATH).
func runScript(t *testing.T, script string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(shell(t), append([]string{script}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// flagValues reads `--name value` pairs from the dry-run argument list.
func flagValues(args []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "--") {
			m[args[i]] = args[i+1]
		}
	}
	return m
}

func TestWrapperSegmentsCoverTheRunOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 12} {
		var ins []result.Input
		var tuples []*segment.Tuple
		seqs := map[string]bool{}
		ids := map[string]bool{}
		files := map[string]bool{}
		for i := 0; i < n; i++ {
			out, errs, code := runScript(t, "run-segment.sh",
				[]string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), fmt.Sprintf("INSTANCES=%d", n), "DRY_RUN=1",
					"START_AT=2030-01-02T03:04:05Z", "RESULT_DIR=/r"},
				"--quiet", "/scripts/test.js")
			if code != 0 {
				t.Fatalf("n=%d i=%d: exit %d: %s", n, i, code, errs)
			}
			args := strings.Split(strings.TrimSpace(out), "\n")
			if args[0] != "run" || args[len(args)-1] != "/scripts/test.js" || args[len(args)-2] != "--quiet" {
				t.Fatalf("n=%d i=%d: command %q", n, i, args)
			}
			f := flagValues(args)
			seg, err := segment.ParseSegment(f["--execution-segment"])
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			seq, err := segment.ParseSequence(f["--execution-segment-sequence"])
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			// The runner refuses a segment that is not one of the
			// sequence's (exit 104); NewTuple is that check.
			tup, err := segment.NewTuple(seg, seq)
			if err != nil {
				t.Fatalf("n=%d i=%d: %v", n, i, err)
			}
			if want := big.NewRat(int64(i), int64(n)).RatString() + ":" + big.NewRat(int64(i+1), int64(n)).RatString(); seg.String() != want {
				t.Errorf("n=%d i=%d: segment %s, want %s", n, i, seg, want)
			}
			if f["--start-at"] != "2030-01-02T03:04:05Z" {
				t.Errorf("n=%d i=%d: --start-at %q", n, i, f["--start-at"])
			}
			seqs[f["--execution-segment-sequence"]] = true
			ids[f["--tag"]] = true
			files[f["--result"]] = true
			tuples = append(tuples, tup)
			ins = append(ins, result.Input{Name: f["--result"], File: &result.File{Run: result.Run{
				ExecutionSegment: tup.Segment().String(), ExecutionSegmentSequence: tup.Sequence().String()}}})
		}
		if len(seqs) != 1 || len(ids) != n || len(files) != n {
			t.Fatalf("n=%d: %d sequences (want 1), %d instance ids, %d result files (want %d)", n, len(seqs), len(ids), len(files), n)
		}
		if err := result.CheckCoverage(ins); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		// Together the instances run exactly the whole test's VUs and
		// iterations, whatever the count (the pitfall of §3.1 is absent).
		for v := int64(0); v <= 40; v++ {
			var sum int64
			for _, tup := range tuples {
				sum += tup.ScaleInt64(v)
			}
			if sum != v {
				t.Fatalf("n=%d: %d VUs scale to %d in total", n, v, sum)
			}
		}
	}
}

func TestWrapperRefusesBadIndexes(t *testing.T) {
	for _, env := range [][]string{
		{"JOB_COMPLETION_INDEX=3", "INSTANCES=3"},
		{"JOB_COMPLETION_INDEX=0", "INSTANCES=0"},
		{"JOB_COMPLETION_INDEX=x", "INSTANCES=3"},
		{"JOB_COMPLETION_INDEX=-1", "INSTANCES=3"},
		{"INSTANCES=3"},
		{"JOB_COMPLETION_INDEX=0"},
	} {
		_, errs, code := runScript(t, "run-segment.sh", append(env, "DRY_RUN=1"), "t.js")
		if code != 2 || !strings.Contains(errs, "run-segment.sh:") {
			t.Errorf("%v: exit %d, %q", env, code, errs)
		}
	}
}

// fakeBuzzload writes a stand-in binary that records its arguments and
// exits with code.
func fakeBuzzload(t *testing.T, dir string, code int) (bin, argsFile string) {
	t.Helper()
	bin, argsFile = filepath.Join(dir, "fake-buzzload"), filepath.Join(dir, "args")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\nexit %d\n", argsFile, code)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

func TestWrapperExitCodes(t *testing.T) {
	for _, c := range []struct{ buzzload, want int }{{0, 0}, {99, 0}, {107, 107}, {104, 104}} {
		bin, argsFile := fakeBuzzload(t, t.TempDir(), c.buzzload)
		_, errs, code := runScript(t, "run-segment.sh", []string{"JOB_COMPLETION_INDEX=1", "INSTANCES=2", "BUZZLOAD=" + bin}, "t.js")
		if code != c.want {
			t.Errorf("buzzload exit %d: wrapper exit %d, want %d (%s)", c.buzzload, code, c.want, errs)
		}
		got, _ := os.ReadFile(argsFile)
		if !strings.Contains(string(got), "1/2:1\n") || strings.Contains(string(got), "--start-at") {
			t.Errorf("arguments without START_AT: %q", got)
		}
	}
}

func TestMergeStepWaitsAndMergesEveryResult(t *testing.T) {
	dir := t.TempDir()
	bin, argsFile := fakeBuzzload(t, dir, 99)
	results := filepath.Join(dir, "results")
	if err := os.Mkdir(results, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"result-1.json", "result-0.json", ".result-2.json.123"} {
		if err := os.WriteFile(filepath.Join(results, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two of three complete (the third is still a temporary file): after
	// WAIT_SECS the step merges what exists, and merge names what is missing.
	_, errs, code := runScript(t, "merge-results.sh", []string{"INSTANCES=3", "WAIT_SECS=0", "RESULT_DIR=" + results, "BUZZLOAD=" + bin})
	if code != 99 || !strings.Contains(errs, "only 2 of 3 results") {
		t.Fatalf("exit %d (want merge's 99), stderr %q", code, errs)
	}
	got, _ := os.ReadFile(argsFile)
	want := strings.Join([]string{"merge", "--summary-export", results + "/summary.json", "-o", results + "/merged.json",
		results + "/result-0.json", results + "/result-1.json"}, "\n") + "\n"
	if string(got) != want {
		t.Fatalf("merge arguments\n%s\nwant\n%s", got, want)
	}
}
