package output

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/thresholds"
)

type fixture struct {
	reg                *metrics.Registry
	dur, counter, gaug *metrics.Metric
	set                *thresholds.Set
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	reg := metrics.NewRegistry()
	if _, err := reg.RegisterBuiltins(); err != nil {
		t.Fatal(err)
	}
	ctr, _ := reg.New("my_counter", metrics.Counter, metrics.Default)
	g, _ := reg.New("my_gauge", metrics.Gauge, metrics.Default)
	var cfg thresholds.Config
	err := json.Unmarshal([]byte(`{"http_req_duration":["p(95)<5000",{"threshold":"avg<4000","abortOnFail":true,"delayAbortEval":"10s"}],
		"http_req_duration{group:::g1}":["max<1"]}`), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	set, err := thresholds.New(cfg, reg)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{reg: reg, dur: reg.Get("http_req_duration"), counter: ctr, gaug: g, set: set}
}

var ts = time.Date(2026, 11, 29, 10, 11, 12, 345678900, time.UTC)

func TestJSONLinesMatchK6Format(t *testing.T) {
	f := newFixture(t)
	var buf syncBuffer
	tz := time.FixedZone("X", 3600)
	out, err := New("json=-", Params{Stdout: &buf, Thresholds: f.set, Location: tz})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	tags := metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "default"}, metrics.Tag{Key: "group", Value: ""})
	out.AddSamples([]metrics.Sample{
		{Metric: f.dur, Tags: tags, Metadata: metrics.NewTagSet(metrics.Tag{Key: "vu", Value: "1"}), Time: ts, Value: 12.5},
		{Metric: f.counter, Time: ts, Value: 1},
		{Metric: f.dur, Tags: tags, Time: ts, Value: 1e-7},
	})
	if err := out.Stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		`{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time","thresholds":["p(95)<5000",{"threshold":"avg<4000","abortOnFail":true,"delayAbortEval":"10s"}],"submetrics":[{"name":"http_req_duration{group:::g1}","suffix":"group:::g1","tags":{"group":"::g1"}}]},"metric":"http_req_duration"}`,
		`{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-29T11:11:12.3456789+01:00","value":12.5,"tags":{"group":"","scenario":"default"},"metadata":{"vu":"1"}}}`,
		`{"type":"Metric","data":{"name":"my_counter","type":"counter","contains":"default","thresholds":[],"submetrics":null},"metric":"my_counter"}`,
		`{"metric":"my_counter","type":"Point","data":{"time":"2026-11-29T11:11:12.3456789+01:00","value":1,"tags":{}}}`,
		`{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-29T11:11:12.3456789+01:00","value":1e-7,"tags":{"group":"","scenario":"default"}}}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, lines[i], want[i])
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil {
			t.Errorf("line %d is not JSON: %v", i, err)
		}
	}
}

func TestJSONFloatsLikeEncodingJSON(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 123456.789, 1e-6, 9.99e-7, 1e20, 1e21, 1.5e300, -2.5e-9} {
		want, _ := json.Marshal(f)
		if got := string(appendJSONFloat(nil, f)); got != string(want) {
			t.Errorf("%v: got %s want %s", f, got, want)
		}
	}
}

// parsePoints reads NDJSON back, checking each Metric line precedes its points.
func parsePoints(t *testing.T, r io.Reader) map[string][]float64 {
	t.Helper()
	declared := map[string]bool{}
	got := map[string][]float64{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		var line struct {
			Type   string `json:"type"`
			Metric string `json:"metric"`
			Data   struct {
				Value float64           `json:"value"`
				Tags  map[string]string `json:"tags"`
				Time  time.Time         `json:"time"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		switch line.Type {
		case "Metric":
			if declared[line.Metric] {
				t.Fatalf("line %d: %s declared twice", n, line.Metric)
			}
			declared[line.Metric] = true
		case "Point":
			if !declared[line.Metric] {
				t.Fatalf("line %d: point before the Metric line of %s", n, line.Metric)
			}
			if !line.Data.Time.Equal(ts) {
				t.Fatalf("line %d: time %v", n, line.Data.Time)
			}
			got[line.Metric] = append(got[line.Metric], line.Data.Value)
		default:
			t.Fatalf("line %d: type %q", n, line.Type)
		}
	}
	return got
}

func TestJSONFileAndGzipParsedBack(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"out.json", "out.json.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			out := NewJSON(path, Params{})
			if err := out.Start(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 1000; i++ {
				out.AddSamples([]metrics.Sample{{Metric: f.counter, Time: ts, Value: float64(i)}, {Metric: f.gaug, Time: ts, Value: 2}})
			}
			if err := out.Stop(); err != nil {
				t.Fatal(err)
			}
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			var r io.Reader = fh
			if strings.HasSuffix(name, ".gz") {
				gz, err := gzip.NewReader(fh)
				if err != nil {
					t.Fatalf("not gzip: %v", err)
				}
				r = gz
			}
			got := parsePoints(t, r)
			if len(got["my_counter"]) != 1000 || got["my_counter"][999] != 999 || len(got["my_gauge"]) != 1000 {
				t.Fatalf("points: %d counter, %d gauge", len(got["my_counter"]), len(got["my_gauge"]))
			}
		})
	}
	t.Run("unwritable path is an error naming it", func(t *testing.T) {
		out := NewJSON(filepath.Join(t.TempDir(), "no", "such", "dir.json"), Params{})
		err := out.Start()
		if err == nil || !strings.Contains(err.Error(), "dir.json") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestOutputFromCollectorWritesWithoutBlocking(t *testing.T) {
	f := newFixture(t)
	c := metrics.NewCollector(f.reg, metrics.CollectorOptions{BatchSize: 16})
	var buf syncBuffer
	out := NewJSON("-", Params{Stdout: &buf})
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	c.AddConsumer(out)
	for i := 0; i < 100; i++ {
		c.Add(metrics.Sample{Metric: f.counter, Time: ts, Value: 1})
	}
	c.Flush()
	if err := out.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := parsePoints(t, strings.NewReader(buf.String())); len(got["my_counter"]) != 100 {
		t.Fatalf("%d points", len(got["my_counter"]))
	}
}

func TestCSVHeaderAndRowsMatchK6(t *testing.T) {
	f := newFixture(t)
	var buf syncBuffer
	out, err := New("csv=-", Params{Stdout: &buf})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1795991518, 500_000_000)
	out.AddSamples([]metrics.Sample{
		{Metric: f.counter, Tags: metrics.NewTagSet(metrics.Tag{Key: "scenario", Value: "default"}, metrics.Tag{Key: "testid", Value: "t1"}), Time: at, Value: 1},
		{Metric: f.dur, Tags: metrics.NewTagSet(metrics.Tag{Key: "status", Value: "200"}, metrics.Tag{Key: "url", Value: "http://x/a,b"},
			metrics.Tag{Key: "kind", Value: "a"}, metrics.Tag{Key: "testid", Value: "t1"}),
			Metadata: metrics.NewTagSet(metrics.Tag{Key: "vu", Value: "3"}, metrics.Tag{Key: "iter", Value: "7"}), Time: at, Value: 12.3456789},
	})
	if err := out.Stop(); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	wantHeader := "metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata"
	if lines[0] != wantHeader {
		t.Fatalf("header\n got %s\nwant %s", lines[0], wantHeader)
	}
	if want := "my_counter,1795991518,1.000000,,,,,,,,,default,,,,,,testid=t1,"; lines[1] != want {
		t.Fatalf("row 1\n got %s\nwant %s", lines[1], want)
	}
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v", err)
	}
	r := rows[2]
	col := func(name string) string {
		for i, h := range rows[0] {
			if h == name {
				return r[i]
			}
		}
		t.Fatalf("no column %s", name)
		return ""
	}
	if col("metric_value") != "12.345679" || col("status") != "200" || col("url") != "http://x/a,b" ||
		col("extra_tags") != "kind=a&testid=t1" || col("metadata") != "iter=7&vu=3" {
		t.Fatalf("row 2 = %v", r)
	}
}

func TestCSVConfig(t *testing.T) {
	cases := []struct {
		rule, arg string
		env       map[string]string
		want      CSVConfig
		err       string
	}{
		{"defaults", "", nil, CSVConfig{"file.csv", time.Second, "unix"}, ""},
		{"bare file name", "out.csv.gz", nil, CSVConfig{"out.csv.gz", time.Second, "unix"}, ""},
		{"key=value form", "fileName=a.csv,saveInterval=5s,timeFormat=rfc3339_nano", nil, CSVConfig{"a.csv", 5 * time.Second, "rfc3339_nano"}, ""},
		{"env then argument wins", "timeFormat=unix_milli", map[string]string{"K6_CSV_TIME_FORMAT": "unix_nano", "K6_CSV_FILENAME": "e.csv"}, CSVConfig{"e.csv", time.Second, "unix_milli"}, ""},
		{"bad time format", "timeFormat=iso", nil, CSVConfig{}, "timeFormat"},
		{"bad interval", "saveInterval=fast", nil, CSVConfig{}, "saveInterval"},
		{"unknown key", "fileName=a.csv,color=red", nil, CSVConfig{}, "color"},
		{"bad env names the variable", "", map[string]string{"K6_CSV_SAVE_INTERVAL": "-1s"}, CSVConfig{}, "K6_CSV_SAVE_INTERVAL"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			got, err := ParseCSVConfig(c.arg, c.env)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
	t.Run("time formats", func(t *testing.T) {
		at := time.Date(2026, 1, 2, 3, 4, 5, 6_007_008, time.UTC)
		for format, want := range map[string]string{"unix": "1767323045", "unix_milli": "1767323045006", "unix_micro": "1767323045006007",
			"unix_nano": "1767323045006007008", "rfc3339": "2026-01-02T03:04:05Z", "rfc3339_nano": "2026-01-02T03:04:05.006007008Z"} {
			c := NewCSV(CSVConfig{TimeFormat: format, SaveInterval: time.Second}, Params{})
			if got := c.timestamp(at); got != want {
				t.Errorf("%s: %s, want %s", format, got, want)
			}
		}
	})
	if _, err := New("influxdb=http://x", Params{}); err == nil {
		t.Fatal("unknown output accepted")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
