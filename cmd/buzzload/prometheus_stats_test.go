package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/output/prometheusrw/promserver"
)

// The per-stat dashboard (issue 29 item 4): with k6's per-stat trends and
// the stats it asks for, every query of dashboards/buzzload-run-stats.json
// has data in a real Prometheus; with k6's defaults (p(99) alone) every
// panel has data but those whose description says which stat they need,
// which have none. And the run says which dashboard fits its settings.
func TestPrometheusRWFeedsTheStatsDashboard(t *testing.T) {
	prom := promserver.Start(t)
	dir := t.TempDir()
	script := writeBuzzRun(t, dir)
	base := []string{"K6_PROMETHEUS_RW_SERVER_URL=" + prom.WriteURL(), "K6_PROMETHEUS_RW_PUSH_INTERVAL=200ms",
		"BUZZ_RATE_LIMIT=true", "BUZZ_RATE_LIMIT_HUMAN_MESSAGES_PER_MIN=3"}
	for _, c := range []struct {
		testid string
		env    []string
		hint   string
	}{
		{"stats1", []string{"K6_PROMETHEUS_RW_TREND_STATS=p(50),p(95),p(99),count"}, "dashboards/buzzload-run-stats.json fits"},
		{"stats0", nil, "add p(50),p(95),count"},
	} {
		res := filepath.Join(dir, c.testid+".result.json")
		code, _, stderr := runCLIEnv(t, append(append([]string{}, base...), c.env...), "run", "-q", "--tag", "testid="+c.testid, "--result", res,
			"-e", "BUZZ_REPORT="+filepath.Join(dir, c.testid+".json"), "-o", "experimental-prometheus-rw", script)
		if code != 0 || pushesLost(t, res) {
			t.Fatalf("%s: exit %d: %s", c.testid, code, stderr)
		}
		if !strings.Contains(stderr, c.hint) {
			t.Errorf("%s: the run does not say which dashboard fits (%q):\n%s", c.testid, c.hint, stderr)
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "dashboards", "buzzload-run-stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Targets     []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	ctx, at := context.Background(), time.Now()
	queries, needing := 0, 0
	for _, p := range d.Panels {
		says := strings.HasPrefix(p.Description, "Needs trend stat ")
		if says {
			needing++
		}
		for _, tg := range p.Targets {
			needs := regexp.MustCompile(`_(p50|p95|count)\{`).MatchString(tg.Expr)
			if needs && !says {
				t.Errorf("panel %s needs a trend stat its description does not name: %s", p.Title, tg.Expr)
			}
			if strings.Contains(tg.Expr, "_seconds") {
				t.Errorf("panel %s reads a native histogram: %s", p.Title, tg.Expr)
			}
			queries++
			for _, testid := range []string{"stats1", "stats0"} {
				expr := substitute(tg.Expr, testid)
				own, fallback := strings.CutSuffix(expr, " or on() vector(0)")
				if fallback && (notWrittenHere(own) || strings.Contains(own, "k6_dropped_iterations_total")) {
					own = expr // a series these runs do not write (no arrival-rate scenario here)
				}
				res, err := prom.Query(ctx, own, at)
				if err != nil {
					t.Errorf("panel %s: %v", p.Title, err)
					continue
				}
				if want := testid == "stats1" || !needs; (len(res) > 0) != want {
					t.Errorf("panel %s with %s: %d series, want data %v: %s", p.Title, testid, len(res), want, own)
				}
			}
		}
	}
	if queries < 20 || needing == 0 {
		t.Fatalf("%d queries, %d panels needing a stat", queries, needing)
	}
}
