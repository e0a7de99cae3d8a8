package main

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// --out web-dashboard as a k6 user runs it (issue 29 item 1): the banner
// gives the live page's address; the page, opened in a real headless
// Chromium while the run goes, draws the periods so far with no console
// line; the event stream sends each period; at the end the export is the
// same page with the Buzz report (steps, checks), every plot drawn, and
// its numbers are the run's (iterations equal the summary's).
func TestWebDashboardLiveAndExport(t *testing.T) {
	chromiumPath(t)
	dir := copyTestdata(t, "ops-tiny.toml")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buzzloadBin(t), "run", "--out", "web-dashboard=port=0&period=1s&export=dash.html",
		"--summary-export", "sum.json", "--relay-metrics-interval", "1s", "ops-tiny.toml")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	url := ""
	for url == "" && lines.Scan() {
		if m := regexp.MustCompile(`web dashboard: (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	go func() {
		for lines.Scan() { // drain
		}
	}()
	if url == "" {
		_ = cmd.Wait()
		t.Fatalf("no web dashboard line in the banner: %s", errb.String())
	}
	// Two periods on the stream, then the page.
	resp, err := http.Get(url + "/events")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	windows := 0
	name := ""
	for windows < 2 && sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			name = n
		}
		if strings.HasPrefix(sc.Text(), "data: ") && name == "window" {
			var w struct {
				EndS    float64 `json:"end_s"`
				Metrics map[string]json.RawMessage
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &w); err != nil || w.EndS <= 0 {
				t.Fatalf("window event %q: %v", sc.Text(), err)
			}
			windows++
		}
	}
	resp.Body.Close()
	live := loadPage(t, url+"/", "", 1600, 4000)
	if len(live.console) > 0 {
		t.Errorf("console output on the live page:\n%s", strings.Join(live.console, "\n"))
	}
	rects := plotRects(t, live.dom)
	if r, ok := rects["k6-vus"]; !ok || ink(live.img, r) < 40 {
		t.Errorf("the live page's VUs plot is missing or blank (plots %v)", rects)
	}
	if !strings.Contains(live.dom, "live: ") {
		t.Error("the live page does not say it is live")
	}
	// The ramp steps are drawn before the report gives their verdicts.
	if !strings.Contains(live.dom, `class="band band-running"`) || !strings.Contains(live.dom, ">step 0<") {
		t.Error("the live page draws no ramp step")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}

	export := filepath.Join(dir, "dash.html")
	checkPage(t, export, []string{"k6-vus", "k6-iterations", "k6-data", "buzz-generator-cpu", "buzz-generator-lag", "clients", "op-publish-latency", "op-publish-rate",
		"relay-live-events", "relay-live-conns"}, nil) // the embedded relay's own numbers, live (issue 45)
	page := loadPage(t, export, "", 1600, 4000)
	if !strings.Contains(page.dom, "<h2>Checks</h2>") || !strings.Contains(page.dom, "result: ok") || !strings.Contains(page.dom, "<h2>Steps</h2>") {
		t.Error("the export lacks the Buzz report's verdict, checks or steps")
	}
	// The numbers are the run's: iterations over the periods = the summary's.
	var sum struct {
		Metrics map[string]struct{ Count float64 } `json:"metrics"`
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "sum.json")); err != nil || json.Unmarshal(raw, &sum) != nil {
		t.Fatalf("summary export: %v", err)
	}
	want := sum.Metrics["iterations"].Count
	raw, _ := os.ReadFile(export)
	data := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(raw)
	if data == nil {
		t.Fatal("no data in the export")
	}
	var pg struct {
		Runs []struct {
			Metrics struct {
				Windows []struct {
					Metrics map[string]struct{ Sum float64 }
				}
			}
		}
	}
	if err := json.Unmarshal(data[1], &pg); err != nil || len(pg.Runs) != 1 {
		t.Fatalf("export data: %v", err)
	}
	got := 0.0
	for _, w := range pg.Runs[0].Metrics.Windows {
		got += w.Metrics["iterations"].Sum
	}
	if got != want || want == 0 {
		t.Errorf("iterations: %v on the page, %v in the summary", got, want)
	}
	cell := regexp.MustCompile(`<td>iterations</td><td class="num">([0-9.]+)</td>`).FindStringSubmatch(html.UnescapeString(page.dom))
	if cell == nil || cell[1] != strconv.FormatFloat(want, 'f', -1, 64) {
		t.Errorf("the page's iterations total %v, want %v", cell, want)
	}
}

// Any k6 script, K6_WEB_DASHBOARD=true as k6 reads it, no server (port -1)
// and an export: the k6 metrics are drawn, no Buzz section.
func TestWebDashboardForAPlainScript(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	script := `import { sleep } from "k6";
export const options = { vus: 2, duration: "3s" };
export default function () { sleep(0.2); }
`
	if err := os.WriteFile(filepath.Join(dir, "plain.js"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runBin(t, dir, []string{"K6_WEB_DASHBOARD=true", "K6_WEB_DASHBOARD_PORT=-1", "K6_WEB_DASHBOARD_PERIOD=1s",
		"K6_WEB_DASHBOARD_EXPORT=plain.html"}, "run", "plain.js")
	if code != 0 || strings.Contains(out, "web dashboard:") {
		t.Fatalf("exit %d (a server line with port -1?)\n%s\n%s", code, out, errs)
	}
	checkPage(t, filepath.Join(dir, "plain.html"), []string{"k6-vus", "k6-iterations", "k6-iteration-duration"}, nil)
	page := loadPage(t, filepath.Join(dir, "plain.html"), "", 1600, 4000)
	if strings.Contains(page.dom, "<h2>Steps</h2>") || strings.Contains(page.dom, "<h2>Generator health</h2>") {
		t.Error("a plain script's page shows Buzz sections")
	}
	// A bad setting is a configuration error naming it.
	code, _, errs = runBin(t, dir, nil, "run", "--out", "web-dashboard=period=soon", "plain.js")
	if code != 104 || !strings.Contains(errs, `period="soon"`) {
		t.Errorf("bad period: exit %d\n%s", code, errs)
	}
}
