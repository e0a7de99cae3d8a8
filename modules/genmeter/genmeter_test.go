package genmeter

import "testing"

// machineCPU reads /proc/stat's first line: busy within total.
func TestMachineCPU(t *testing.T) {
	if busy, total := machineCPU(); total <= 0 || busy < 0 || busy > total {
		t.Errorf("/proc/stat: busy %v of %v", busy, total)
	}
}
