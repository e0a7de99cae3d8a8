package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/google/pprof/profile"
)

// readProfile parses a pprof file and returns its sample type names.
func readProfile(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("profile not written: %v", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type)
	}
	return types
}

// --cpuprofile and BUZZLOAD_MEMPROFILE on relay: both files are pprof
// profiles of the right kind once the relay stops.
func TestRelayWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var out, errb syncBuffer
	sigs := make(chan os.Signal, 1)
	env := cliEnv{Stdout: &out, Stderr: &errb, Signals: sigs,
		Env: []string{"BUZZ_OPERATOR_SECRET_FILE=" + filepath.Join(dir, "op.key"), "BUZZLOAD_MEMPROFILE=" + mem}}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(context.Background(), []string{"relay", "--listen", "127.0.0.1:0", "--cpuprofile", cpu}, env)
	}()
	re := regexp.MustCompile(`websocket: +ws://`)
	if !waitfor.Within(5*time.Second, func() bool { return re.MatchString(out.String()) }) {
		t.Fatalf("relay did not start: %q %q", out.String(), errb.String())
	}
	sigs <- syscall.SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if types := readProfile(t, cpu); !strings.Contains(strings.Join(types, ","), "cpu") {
		t.Errorf("CPU profile sample types %v", types)
	}
	if types := readProfile(t, mem); !strings.Contains(strings.Join(types, ","), "inuse_space") {
		t.Errorf("heap profile sample types %v", types)
	}
}

// On run the flag wins over the variable, and a profile that cannot be
// created is an error naming the flag.
func TestRunProfileFlags(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.js")
	if err := os.WriteFile(script, []byte("export default function () {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cpu, envCPU, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "env-cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var out, errb syncBuffer
	env := cliEnv{Stdout: &out, Stderr: &errb, Env: []string{"BUZZLOAD_CPUPROFILE=" + envCPU}}
	code := dispatch(context.Background(), []string{"run", "-q", "--iterations", "3", "--cpuprofile", cpu, "--memprofile", mem, script}, env)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	readProfile(t, cpu)
	readProfile(t, mem)
	if st, err := os.ReadFile(mem + ".memstats"); err != nil || !strings.Contains(string(st), " StackInuse=") || !strings.Contains(string(st), " Goroutines=") {
		t.Errorf("memstats beside the heap profile: %q %v", st, err)
	}
	if _, err := os.Stat(envCPU); err == nil {
		t.Error("BUZZLOAD_CPUPROFILE was used although --cpuprofile was given")
	}
	errb = syncBuffer{}
	code = dispatch(context.Background(), []string{"run", "-q", "--cpuprofile", filepath.Join(dir, "no", "such", "dir"), script}, cliEnv{Stdout: &out, Stderr: &errb})
	if code == 0 || !strings.Contains(errb.String(), "--cpuprofile") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
