// Command benchreport turns `go test -bench` output (several -count runs)
// into a Markdown table: for every benchmark and every unit it reports
// (ns/op, B/op, allocs/op and each b.ReportMetric unit) the median, min and
// max over the runs, and the spread (max−min)/median so a noisy figure is
// visible as such.
//
//	go run ./scripts/benchreport bench.txt > bench-report.md
//
// Configuration lines in the input ("key: value", as go test and
// scripts/bench.sh write them) are echoed above the table, so the report
// names the machine it came from. Lines it cannot read are ignored: the
// input interleaves test logs with results.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Series is one benchmark's values of one unit over the runs.
type Series struct {
	Pkg, Name, Unit string
	Values          []float64
}

// Report is the parsed input: configuration lines in order, then the
// series in order of first appearance.
type Report struct {
	Config []string
	Series []*Series
}

var (
	nameRe   = regexp.MustCompile(`^(Benchmark\S*?)(?:-\d+)?$`)
	configRe = regexp.MustCompile(`^([a-zA-Z][\w-]*): (.*)$`)
)

// Parse reads go test -bench output. A result line is a benchmark name, an
// iteration count and value/unit pairs; when a benchmark logs, go test
// prints its name alone and the figures on a later line, which is joined.
func Parse(r io.Reader) (*Report, error) {
	rep := &Report{}
	index := map[string]*Series{}
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		if m := configRe.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "Benchmark") {
			switch m[1] {
			case "pkg":
				pkg = m[2]
			case "goos", "goarch", "cpu":
				if !slices.Contains(rep.Config, line) {
					rep.Config = append(rep.Config, line)
				}
			default:
				rep.Config = append(rep.Config, line)
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := ""
		if m := nameRe.FindStringSubmatch(fields[0]); m != nil {
			name, fields = m[1], fields[1:]
			if len(fields) == 0 {
				pending = name // figures follow the benchmark's own log lines
				continue
			}
		} else if pending != "" && isCount(fields[0]) {
			name = pending
		} else {
			continue
		}
		pending = ""
		if len(fields) < 3 || !isCount(fields[0]) || len(fields)%2 != 1 {
			continue
		}
		for i := 1; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			key := pkg + "\x00" + name + "\x00" + fields[i+1]
			s := index[key]
			if s == nil {
				s = &Series{Pkg: pkg, Name: name, Unit: fields[i+1]}
				index[key] = s
				rep.Series = append(rep.Series, s)
			}
			s.Values = append(s.Values, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading benchmark output: %w", err)
	}
	return rep, nil
}

func isCount(s string) bool {
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n > 0
}

// Median of a non-empty slice (the mean of the middle two for an even count).
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Format prints v with about four significant digits, no exponent for the
// magnitudes benchmarks produce.
func Format(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// Write prints the report as Markdown.
func Write(w io.Writer, rep *Report) error {
	var b strings.Builder
	for _, c := range rep.Config {
		fmt.Fprintf(&b, "- %s\n", c)
	}
	if len(rep.Config) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("| package | benchmark | unit | runs | median | min | max | spread |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|\n")
	for _, s := range rep.Series {
		med := Median(s.Values)
		lo, hi := slices.Min(s.Values), slices.Max(s.Values)
		spread := "–"
		if med != 0 {
			spread = fmt.Sprintf("%.0f %%", 100*(hi-lo)/math.Abs(med))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s |\n",
			shortPkg(s.Pkg), strings.TrimPrefix(s.Name, "Benchmark"), s.Unit, len(s.Values),
			Format(med), Format(lo), Format(hi), spread)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/buzzload/buzzload/")
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	in := stdin
	switch len(args) {
	case 0:
	case 1:
		f, err := os.Open(args[0])
		if err != nil {
			return fmt.Errorf("benchreport: %w", err)
		}
		defer f.Close()
		in = f
	default:
		return errors.New("usage: benchreport [bench.txt]")
	}
	rep, err := Parse(in)
	if err != nil {
		return fmt.Errorf("benchreport: %w", err)
	}
	if len(rep.Series) == 0 {
		return errors.New("benchreport: no benchmark results in the input")
	}
	return Write(stdout, rep)
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
