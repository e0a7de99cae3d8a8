package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/output/opentelemetry/otlptest"
)

// --out opentelemetry against loopback OTLP receivers, compared with what
// real k6 v2.2.0 sent for the same script and settings (testdata/otel:
// k6's single export of testdata/cloud/probe.js, captured on 127.0.0.1 —
// http/protobuf with K6_OTEL_SERVICE_NAME=probe-svc; gRPC with
// -o experimental-opentelemetry, K6_OTEL_METRIC_PREFIX=k6_, K6_OTEL_HEADERS
// and basic auth).

// probeValues says which metrics' values the script fixes (the built-ins
// carry timings and byte counts that differ per run: only their shape is
// compared).
func probeValues(name string) bool {
	name = strings.TrimPrefix(name, "k6_")
	return strings.HasPrefix(name, "probe_") || strings.HasPrefix(name, "checks")
}

func TestOpenTelemetryOutputSendsWhatK6Sends(t *testing.T) {
	script := filepath.Join(t.TempDir(), "probe.js")
	src, err := os.ReadFile("testdata/cloud/probe.js")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		proto, out, k6 string
		start          func() (*otlptest.Receiver, error)
		env            func(addr string) []string
		headers        map[string]string
	}{
		{"http/protobuf", "opentelemetry", "testdata/otel/k6-v2.2.0-http.bin", otlptest.StartHTTP, func(a string) []string {
			return []string{"K6_OTEL_EXPORTER_PROTOCOL=http/protobuf", "K6_OTEL_HTTP_EXPORTER_INSECURE=true",
				"K6_OTEL_HTTP_EXPORTER_ENDPOINT=" + a, "K6_OTEL_SERVICE_NAME=probe-svc"}
		}, map[string]string{"user-agent": "OTel Go OTLP over HTTP/protobuf metrics exporter/1.43.0", "content-type": "application/x-protobuf"}},
		{"grpc", "experimental-opentelemetry", "testdata/otel/k6-v2.2.0-grpc.bin", otlptest.StartGRPC, func(a string) []string {
			return []string{"K6_OTEL_GRPC_EXPORTER_INSECURE=true", "K6_OTEL_GRPC_EXPORTER_ENDPOINT=" + a,
				"K6_OTEL_METRIC_PREFIX=k6_", "K6_OTEL_HEADERS=x-probe=one%20two,x-other=3",
				"K6_OTEL_HTTP_EXPORTER_USERNAME=u", "K6_OTEL_HTTP_EXPORTER_PASSWORD=p"}
		}, map[string]string{"user-agent": "OTel Go OTLP over gRPC metrics exporter/1.44.0 grpc-go/1.83.0",
			"x-probe": "one two", "x-other": "3", "authorization": "Basic dTpw"}},
	} {
		t.Run(tc.proto, func(t *testing.T) {
			rcv, err := tc.start()
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			result := filepath.Join(t.TempDir(), "result.json")
			code, out, errs := runCLIEnv(t, tc.env(rcv.Addr), "run", "--result", result, "-o", tc.out, script)
			// k6 exits 99 too: the probe's p(95)<1000 is crossed.
			if code != 99 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errs)
			}
			warned := strings.Contains(errs, `OpenTelemetry output has been graduated as a stable output.You can now use just \"opentelemetry\" instead of \"experimental-opentelemetry\".`)
			if warned != (tc.out == "experimental-opentelemetry") {
				t.Errorf("k6's warning for the old name: printed=%v\n%s", warned, errs)
			}
			exports := rcv.Exports()
			if len(exports) == 0 {
				t.Fatalf("nothing exported\n%s", errs)
			}
			b, err := os.ReadFile(tc.k6)
			if err != nil {
				t.Fatal(err)
			}
			k6, err := otlptest.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			last := exports[len(exports)-1]
			got, want := otlptest.Lines(last.Request, probeValues), otlptest.Lines(k6, probeValues)
			if !slices.Equal(got, want) {
				t.Errorf("export differs from k6 v2.2.0's:\n--- buzzload\n%s\n--- k6\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			gotRes, gotScopes := otlptest.Resource(last.Request)
			wantRes, wantScopes := otlptest.Resource(k6)
			// service.version is the runner's version, as k6 puts its own.
			delete(gotRes, "service.version")
			delete(wantRes, "service.version")
			if !maps.Equal(gotRes, wantRes) || !slices.Equal(gotScopes, wantScopes) {
				t.Errorf("resource %v scopes %v, k6 sent %v %v", gotRes, gotScopes, wantRes, wantScopes)
			}
			for k, v := range tc.headers {
				if last.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, last.Headers[k], v)
				}
			}
			if tc.proto == "http/protobuf" && last.Path != "/v1/metrics" {
				t.Errorf("path %q", last.Path)
			}
			if !strings.Contains(out, "output: opentelemetry ("+tc.proto) {
				t.Errorf("banner does not describe the output:\n%s", out)
			}
			if !strings.Contains(out+errs, "dashboards/buzzload-otel.json") {
				t.Errorf("no word of the Grafana dashboard for these series:\n%s\n%s", out, errs)
			}
			var res struct {
				Outputs []struct {
					Output string           `json:"output"`
					Counts map[string]int64 `json:"counts"`
				} `json:"outputs"`
			}
			rb, _ := os.ReadFile(result)
			if err := json.Unmarshal(rb, &res); err != nil || len(res.Outputs) != 1 || res.Outputs[0].Counts["exports"] < 1 || res.Outputs[0].Counts["failed_exports"] != 0 {
				t.Errorf("result outputs: %s (%v)", rb, err)
			}
		})
	}
}

// A backend that answers 500, or is not there, costs the copy, never the
// run: the exit code is the run's, and the final export's failure is one
// error line, as k6 v2.2.0 logged it ("can't shutdown OpenTelemetry metric
// provider" error="failed to upload metrics: …").
func TestOpenTelemetryBackendFailureCostsTheCopyNotTheRun(t *testing.T) {
	script := filepath.Join(t.TempDir(), "ok.js")
	if err := os.WriteFile(script, []byte(`import { Counter } from 'k6/metrics';
const c = new Counter('otel_probe');
export const options = { iterations: 3 };
export default function () { c.add(1); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	failing, err := otlptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	failing.Fail(true)
	down, err := otlptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	down.Close() // a port nobody listens on
	for _, tc := range []struct {
		rule, addr, want string
	}{
		{"answers 500", failing.Addr, "500 Internal Server Error"},
		{"is down", down.Addr, "connection refused"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			result := filepath.Join(t.TempDir(), "result.json")
			code, out, errs := runCLIEnv(t, []string{"K6_OTEL_EXPORTER_PROTOCOL=http/protobuf", "K6_OTEL_HTTP_EXPORTER_INSECURE=true",
				"K6_OTEL_HTTP_EXPORTER_ENDPOINT=" + tc.addr}, "run", "-q", "--result", result, "-o", "opentelemetry", script)
			if code != 0 {
				t.Fatalf("exit %d, want the run's 0\n%s\n%s", code, out, errs)
			}
			lines := regexp.MustCompile(`(?m)^.*level=error.*$`).FindAllString(errs, -1)
			if len(lines) != 1 || !strings.Contains(lines[0], `msg="can't shutdown OpenTelemetry metric provider" error="failed to upload metrics: `) ||
				!strings.Contains(lines[0], tc.want) {
				t.Fatalf("want one error line as k6 logs it, got:\n%s", errs)
			}
			rb, _ := os.ReadFile(result)
			if !regexp.MustCompile(`"failed_exports":\s*1\b`).Match(rb) {
				t.Errorf("the result does not count the failed export: %s", rb)
			}
		})
	}
	if len(failing.Exports()) == 0 {
		t.Error("the failing receiver saw no export")
	}
}

// Settings k6 refuses are refused before the run starts, with k6's text
// where k6 has one, and exit 104 (k6 itself exits 255 for an unparsable
// value: docs/k6-compat.md).
func TestOpenTelemetryInvalidSettingsRefuseTheRun(t *testing.T) {
	script := filepath.Join(t.TempDir(), "ok.js")
	if err := os.WriteFile(script, []byte("export default function () {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ env, want string }{
		{"K6_OTEL_EXPORTER_PROTOCOL=bogus", `could not create the 'opentelemetry' output: error validating OpenTelemetry output config: unsupported exporter protocol "bogus", only "grpc" and "http/protobuf" are supported`},
		{"K6_OTEL_HTTP_EXPORTER_ENDPOINT=http://127.0.0.1:1", "HTTP exporter endpoint must only be host and port, no scheme"},
		{"K6_OTEL_EXPORT_INTERVAL=abc", `K6_OTEL_EXPORT_INTERVAL="abc": want a duration`},
		{"K6_OTEL_GRPC_EXPORTER_INSECURE=maybe", `K6_OTEL_GRPC_EXPORTER_INSECURE="maybe": want true or false`},
		{"K6_OTEL_HEADERS=a=1,secret-token", "K6_OTEL_HEADERS: invalid header number 2 (not shown: it may hold a secret), expected format key=value"},
		{"K6_OTEL_SERVICE_NAME=", "providing service name is required"},
	} {
		env := []string{tc.env}
		if strings.Contains(tc.env, "HTTP_EXPORTER_ENDPOINT") {
			env = append(env, "K6_OTEL_EXPORTER_PROTOCOL=http/protobuf")
		}
		code, out, errs := runCLIEnv(t, env, "run", "-q", "-o", "opentelemetry", script)
		if strings.Contains(out+errs, "secret-token") {
			t.Errorf("%s: a header was printed:\n%s", tc.env, errs)
		}
		if code != 104 || !strings.Contains(strings.ReplaceAll(errs, `\"`, `"`), tc.want) || strings.Contains(out, "TOTAL RESULTS") {
			t.Errorf("%s: exit %d, want 104 and %q before the run\n%s\n%s", tc.env, code, tc.want, out, errs)
		}
	}
}
