package sysmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadsMeminfoAndCgroupLimit(t *testing.T) {
	dir := t.TempDir()
	mi := filepath.Join(dir, "meminfo")
	_ = os.WriteFile(mi, []byte("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n"), 0o644)
	if got := memAvailable(mi); got != 20000000<<10 {
		t.Errorf("MemAvailable %d", got)
	}
	lim := filepath.Join(dir, "memory.max")
	_ = os.WriteFile(lim, []byte("max\n"), 0o644)
	if got := cgroupLimit(lim); got != 0 {
		t.Errorf("max read as %d", got)
	}
	_ = os.WriteFile(lim, []byte("1073741824\n"), 0o644)
	if got := cgroupLimit(lim); got != 1<<30 {
		t.Errorf("limit %d", got)
	}
	if Available() == 0 {
		t.Error("this machine's memory could not be read")
	}
}
