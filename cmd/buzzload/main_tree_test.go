package main

import (
	"fmt"
	"os"
	"sort"
	"testing"
)

// TestMain fails the package when its tests leave files in the source
// directory (a run whose script writes its default buzz-report.json into
// the working directory once left one here, and it was committed): every
// test writes into t.TempDir().
func TestMain(m *testing.M) {
	before, err := dirNames(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	after, err := dirNames(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if stray := newNames(before, after); len(stray) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the tests left files in cmd/buzzload: %v (write them under t.TempDir())\n", stray)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func dirNames(dir string) (map[string]bool, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, e := range es {
		names[e.Name()] = true
	}
	return names, nil
}

// newNames lists, sorted, the names in after that are not in before.
func newNames(before, after map[string]bool) []string {
	var out []string
	for n := range after {
		if !before[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
