package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/output/opentelemetry/otlptest"
)

// dashboards/buzzload-otel.json reads the series a Buzz run sends with
// --out opentelemetry, as Prometheus names them when it receives OTLP: every
// metric its panels query is among the names of what the output exported
// in a real run (Debian's Prometheus 2.42 has no OTLP receiver, so the
// names follow Prometheus's documented translation: otlptest.PromSeriesNames).
func TestOTelDashboardQueriesWhatARunSends(t *testing.T) {
	rcv, err := otlptest.StartHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	dir := t.TempDir()
	script := writeBuzzRun(t, dir)
	code, out, errs := runCLIEnv(t, []string{"K6_OTEL_EXPORTER_PROTOCOL=http/protobuf", "K6_OTEL_HTTP_EXPORTER_INSECURE=true",
		"K6_OTEL_HTTP_EXPORTER_ENDPOINT=" + rcv.Addr, "BUZZ_RATE_LIMIT=true", "BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN=3"},
		"run", "-q", "-e", "BUZZ_REPORT="+filepath.Join(dir, "report.json"), "-o", "opentelemetry", script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	ex := rcv.Exports()
	if len(ex) == 0 {
		t.Fatal("nothing exported")
	}
	names := otlptest.PromSeriesNames(ex[len(ex)-1].Request)
	dash := readDashboard(t, "buzzload-otel.json")
	// Series that exist only once what they count happened: their panels
	// read zero until then.
	onlyWhenItHappens := map[string]bool{"buzz_op_pending": true, "buzz_client_exits_total": true,
		"dropped_iterations_total": true, "buzz_ledger_missed_total": true, "buzz_ledger_lost_total": true}
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\{`)
	queried := 0
	for _, q := range dash.queries() {
		for _, m := range ident.FindAllString(q.expr, -1) {
			name := strings.TrimSuffix(m, "{")
			queried++
			if onlyWhenItHappens[name] && strings.Contains(q.expr, "or on() vector(0)") {
				continue
			}
			if !names[name] {
				have := slices.Sorted(maps.Keys(names))
				t.Errorf("%s queries %s, which the run did not send; sent: %v", q.where, name, have)
			}
		}
	}
	testid := false
	for _, v := range dash.Templating.List {
		testid = testid || v.Name == "testid" && strings.Contains(fmt.Sprint(v.Query), "label_values(vus, testid)")
	}
	if !names["vus"] || !testid {
		t.Error("the testid variable reads vus, which must be sent")
	}
	if queried < 10 {
		t.Fatalf("only %d series queried: is the dashboard there?", queried)
	}
}
