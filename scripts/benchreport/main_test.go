package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `nproc: 2
goos: linux
goarch: amd64
pkg: github.com/buzzload/buzzload/modules/nostr
cpu: AMD EPYC
BenchmarkSignEvent-2   	   10000	    120000 ns/op	     400 B/op	       5 allocs/op
BenchmarkSignEvent-2   	   10000	    100000 ns/op	     400 B/op	       5 allocs/op
BenchmarkSignEvent-2   	   10000	    140000 ns/op	     400 B/op	       5 allocs/op
some log line from a test
pkg: github.com/buzzload/buzzload/engine/executor
goos: linux
BenchmarkConstantArrivalRate30k/100vus-2         	       1	2001000000 ns/op	        12.50 %dropped	     29000 iters/s
BenchmarkConstantArrivalRate30k/100vus-2
    bench_test.go:12: a log line
       1	2002000000 ns/op	        13.50 %dropped	     29500 iters/s
BenchmarkBroken-2   	 not a result
PASS
ok  	github.com/buzzload/buzzload/engine/executor	9.1s
`

func TestParse(t *testing.T) {
	rep, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rep.Config, ";"); got != "nproc: 2;goos: linux;goarch: amd64;cpu: AMD EPYC" {
		t.Errorf("config %q", got)
	}
	want := []struct {
		pkg, name, unit string
		n               int
		median          float64
	}{
		{"github.com/buzzload/buzzload/modules/nostr", "BenchmarkSignEvent", "ns/op", 3, 120000},
		{"github.com/buzzload/buzzload/modules/nostr", "BenchmarkSignEvent", "B/op", 3, 400},
		{"github.com/buzzload/buzzload/modules/nostr", "BenchmarkSignEvent", "allocs/op", 3, 5},
		{"github.com/buzzload/buzzload/engine/executor", "BenchmarkConstantArrivalRate30k/100vus", "ns/op", 2, 2001500000},
		{"github.com/buzzload/buzzload/engine/executor", "BenchmarkConstantArrivalRate30k/100vus", "%dropped", 2, 13},
		{"github.com/buzzload/buzzload/engine/executor", "BenchmarkConstantArrivalRate30k/100vus", "iters/s", 2, 29250},
	}
	if len(rep.Series) != len(want) {
		for _, s := range rep.Series {
			t.Logf("%+v", *s)
		}
		t.Fatalf("%d series, want %d", len(rep.Series), len(want))
	}
	for i, w := range want {
		s := rep.Series[i]
		if s.Pkg != w.pkg || s.Name != w.name || s.Unit != w.unit || len(s.Values) != w.n || Median(s.Values) != w.median {
			t.Errorf("series %d = %+v (median %v), want %+v", i, *s, Median(s.Values), w)
		}
	}
}

func TestWrite(t *testing.T) {
	rep, _ := Parse(strings.NewReader(sample))
	var out bytes.Buffer
	if err := Write(&out, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"- nproc: 2\n",
		"| modules/nostr | SignEvent | ns/op | 3 | 120000 | 100000 | 140000 | 33 % |\n",
		"| engine/executor | ConstantArrivalRate30k/100vus | %dropped | 2 | 13.00 | 12.50 | 13.50 | 8 % |\n",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("missing %q in\n%s", line, out.String())
		}
	}
}

func TestRunRejectsEmptyInput(t *testing.T) {
	err := run(nil, strings.NewReader("PASS\nok x 1s\n"), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Fatalf("err = %v", err)
	}
	if err := run([]string{"/nonexistent/bench.txt"}, nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "/nonexistent/bench.txt") {
		t.Fatalf("err = %v", err)
	}
}

func TestMedianAndFormat(t *testing.T) {
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median %v", m)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median %v", m)
	}
	for v, want := range map[float64]string{0: "0", 123456.7: "123457", 123.45: "123.5", 1.234: "1.23", 0.01234: "0.0123"} {
		if got := Format(v); got != want {
			t.Errorf("Format(%v) = %q, want %q", v, got, want)
		}
	}
}
