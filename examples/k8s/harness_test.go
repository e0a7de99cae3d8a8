package k8s

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The tests of this package run what a cluster would: the binary (as `k6`)
// and the image. Both are built once per test binary into work.
var (
	work     string
	binOnce  sync.Once
	binPath  string
	binErr   error
	imgOnce  sync.Once
	imgErr   error
	built    bool
	imageTag = "buzzload:test"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "buzzload-k8s-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	work = dir
	code := m.Run()
	if imgErr == nil && built {
		// A rebuilt binary leaves the previous image dangling; the build
		// from a warm Go cache takes seconds, so keep none.
		_ = exec.Command("podman", "--storage-driver", "vfs", "rmi", "-f", imageTag).Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is the module root, two levels up from examples/k8s.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// k6Bin builds the static buzzload binary once and returns a directory
// holding it as both `buzzload` and `k6` (a link, as in the image), to put
// first on PATH: the operator runs `k6 ...` literally.
func k6Bin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir := filepath.Join(work, "bin")
		if binErr = os.MkdirAll(dir, 0o755); binErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, "buzzload"), "./cmd/buzzload")
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binErr = os.Symlink("buzzload", filepath.Join(dir, "k6"))
		binPath = dir
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// need returns the path of a program the test runs, failing when it is
// missing under CI=true or BUZZLOAD_REQUIRE_PODMAN=1 (.ci/run installs
// podman, runc, busybox-static and curl) and skipping otherwise.
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" || os.Getenv("BUZZLOAD_REQUIRE_PODMAN") == "1" {
		t.Fatalf("%s is not installed (apt-get install podman runc busybox-static curl): %v", name, err)
	}
	t.Skipf("%s is not installed; CI=true makes this a failure", name)
	return ""
}

// image builds buzzload:test with scripts/image.sh from the binary k6Bin
// built: the command `make image` runs, with another tag and context.
func image(t *testing.T) {
	t.Helper()
	need(t, "podman")
	need(t, "runc")
	need(t, "busybox")
	bin := k6Bin(t)
	imgOnce.Do(func() {
		cmd := exec.Command("sh", "scripts/image.sh", imageTag, filepath.Join(work, "image"))
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "BUZZLOAD_BIN="+filepath.Join(bin, "buzzload"))
		out, err := cmd.CombinedOutput()
		built = true
		if err != nil {
			imgErr = fmt.Errorf("scripts/image.sh: %v\n%s", err, out)
		}
	})
	if imgErr != nil {
		t.Fatal(imgErr)
	}
}

// podmanRun runs the image the way this kind of machine allows (vfs, runc,
// cgroupfs, host network, explicit limits), with extra flags before the
// image and args after it. It returns stdout, stderr and the exit code.
func podmanRun(t *testing.T, flags []string, args ...string) (string, string, int) {
	t.Helper()
	full := append([]string{"--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager=cgroupfs", "run", "--rm",
		"--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}, flags...)
	full = append(append(full, imageTag), args...)
	cmd := exec.Command("podman", full...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("podman %s: %v", strings.Join(full, " "), err)
	}
	return out.String(), errb.String(), code
}
