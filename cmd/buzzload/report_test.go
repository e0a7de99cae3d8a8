package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumPath is the real headless Chromium the HTML report is checked in
// (.ci/run installs Debian's chromium). Missing, the test fails under CI or
// BUZZLOAD_REQUIRE_CHROMIUM=1 and skips otherwise.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" || os.Getenv("BUZZLOAD_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium not found (apt-get install chromium; .ci/run does)")
	}
	t.Skip("chromium not found; CI=true or BUZZLOAD_REQUIRE_CHROMIUM=1 makes this a failure")
	return ""
}

// pageShot loads page in headless Chromium once: its DOM after the script
// ran, a screenshot of the whole page at width×height, and every console
// line (a message, an uncaught exception, a CSP violation: the page logs
// nothing when it works).
type pageShot struct {
	dom     string
	img     image.Image
	console []string
}

func loadPage(t *testing.T, page, fragment string, width, height int) pageShot {
	t.Helper()
	bin := chromiumPath(t)
	dir := t.TempDir()
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second) // a loaded 2-core machine
	defer cancel()
	args := []string{"--headless", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--no-first-run", "--disable-extensions", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height),
		"--screenshot=" + shot, "--dump-dom", pageURL(page) + fragment}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...) // Chromium refuses root with its sandbox
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	var ps pageShot
	ps.dom = out.String()
	for _, line := range strings.Split(errb.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			ps.console = append(ps.console, line)
		}
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, errb.String())
	}
	defer f.Close()
	if ps.img, err = png.Decode(f); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return ps
}

// pageURL is page as Chromium opens it: a file, or a served page (http).
func pageURL(page string) string {
	if strings.HasPrefix(page, "http://") {
		return page
	}
	return "file://" + page
}

// ink counts the strongly coloured pixels of r: the plotted lines (axes,
// grid, text and the step bands are grey or pale), so a plot with nothing
// drawn has next to none.
func ink(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, g, b, _ := img.At(x, y).RGBA()
			hi, lo := max(c, g, b)>>8, min(c, g, b)>>8
			if hi-lo > 90 {
				n++
			}
		}
	}
	return n
}

var rectRE = regexp.MustCompile(`data-plot="([^"]+)"[^>]*data-rect="(\d+),(\d+),(\d+),(\d+)"`)

// plotRects are the plots the page drew and where (data-rect).
func plotRects(t *testing.T, dom string) map[string]image.Rectangle {
	t.Helper()
	out := map[string]image.Rectangle{}
	for _, m := range rectRE.FindAllStringSubmatch(dom, -1) {
		v := make([]int, 4)
		for i := range v {
			v[i], _ = strconv.Atoi(m[2+i])
		}
		out[m[1]] = image.Rect(v[0], v[1], v[0]+v[2], v[1]+v[3])
	}
	if n := regexp.MustCompile(`data-plots="(\d+)"`).FindStringSubmatch(dom); n == nil || n[1] != strconv.Itoa(len(out)) {
		t.Fatalf("the page says %v plots, %d found with a position", n, len(out))
	}
	return out
}

// checkPage: no console line, and every plot (but the skipped ones) has
// something drawn in the screenshot.
func checkPage(t *testing.T, page string, wantPlots []string, blankOK func(string) bool) {
	t.Helper()
	ps := loadPage(t, page, "", 1600, 14000)
	if len(ps.console) > 0 {
		t.Fatalf("console output loading %s:\n%s", page, strings.Join(ps.console, "\n"))
	}
	if h := regexp.MustCompile(`data-height="(\d+)"`).FindStringSubmatch(ps.dom); h == nil {
		t.Fatal("the page's script did not finish (no data-height)")
	} else if n, _ := strconv.Atoi(h[1]); n > 14000 {
		t.Fatalf("page %d px tall, taller than the screenshot", n)
	}
	rects := plotRects(t, ps.dom)
	for _, id := range wantPlots {
		if _, ok := rects[id]; !ok {
			t.Errorf("no plot %q (plots: %v)", id, rects)
		}
	}
	for id, r := range rects {
		if blankOK != nil && blankOK(id) {
			continue
		}
		if n := ink(ps.img, r); n < 40 {
			t.Errorf("plot %s at %v is blank in the screenshot (%d coloured pixels)", id, r, n)
		}
	}
}

// The HTML report of a real run (buzzload report on its result file, and
// run --report-html), and the overlay of two runs (compare -o), load in a
// real headless Chromium with no console line, and every plot shows lines.
// A fragment #plot=ID shows that plot alone.
func TestHTMLReportInChromium(t *testing.T) {
	chromiumPath(t)
	dir := copyTestdata(t, "ops-tiny.toml")
	code, _, errs := runBin(t, dir, nil, "run", "-q", "--report-interval", "1s", "--result", "res.json",
		"--report", "rep.json", "--report-html", "run.html", "ops-tiny.toml")
	if code != 0 {
		t.Fatalf("run exit %d: %s", code, errs)
	}
	if code, _, errs := runBin(t, dir, nil, "report", "-o", "report.html", "res.json"); code != 0 {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	if code, _, errs := runBin(t, dir, nil, "compare", "-o", "cmp.html", "res.json", "rep.json"); code != 0 {
		t.Fatalf("compare exit %d: %s", code, errs)
	}
	for _, f := range []string{"report.html", "run.html", "cmp.html"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		// Self-contained: nothing fetched from anywhere.
		if regexp.MustCompile(`(?i)<(script|link|img)[^>]+(src|href)=`).Match(b) {
			t.Errorf("%s references an outside file", f)
		}
	}
	// A rate is drawn over every window, zero where the op had none (connect
	// happens only as a step starts): one point per window, no bridging.
	var rj struct{ Windows []json.RawMessage }
	if raw, err := os.ReadFile(filepath.Join(dir, "rep.json")); err != nil || json.Unmarshal(raw, &rj) != nil || len(rj.Windows) < 3 {
		t.Fatalf("rep.json windows: %v", err)
	}
	page := loadPage(t, filepath.Join(dir, "run.html"), "", 1600, 3000)
	fig := regexp.MustCompile(`(?s)data-plot="op-connect-rate".*?<polyline points="([^"]*)"`).FindStringSubmatch(page.dom)
	if fig == nil || len(strings.Fields(fig[1])) != len(rj.Windows) {
		t.Errorf("connect's rate line has %v points, want one per window (%d)", fig, len(rj.Windows))
	}
	// The clients are drawn to the last window, a zero where they had all
	// left (the line ended a window early: issue 29 item 2).
	cl := regexp.MustCompile(`(?s)data-plot="clients".*?<polyline points="([^"]*)"`).FindStringSubmatch(page.dom)
	if cl == nil || len(strings.Fields(cl[1])) != len(rj.Windows) {
		t.Errorf("the clients line has %v points, want one per window (%d)", cl, len(rj.Windows))
	}
	// The checks are on the page (issue 26): the tally and each judgement.
	if one := loadPage(t, filepath.Join(dir, "run.html"), "", 1600, 3000); !strings.Contains(one.dom, "Checks") ||
		!strings.Contains(one.dom, "post-run sweep") || !regexp.MustCompile(`checks: \d+ pass / 0 fail`).MatchString(one.dom) {
		t.Errorf("the page does not show the checks")
	}
	want := []string{"clients", "generator-cpu", "generator-lag", "op-connect-latency", "op-connect-rate", "op-publish-latency", "op-hot_reply-rate"}
	checkPage(t, filepath.Join(dir, "report.html"), want, nil)
	checkPage(t, filepath.Join(dir, "cmp.html"), want, nil)

	one := loadPage(t, filepath.Join(dir, "run.html"), "#plot=op-publish-latency", 800, 300)
	if len(one.console) > 0 {
		t.Fatalf("console: %v", one.console)
	}
	if n := ink(one.img, one.img.Bounds()); n < 40 {
		t.Errorf("#plot=op-publish-latency: blank (%d coloured pixels)", n)
	}

	// A cut link (a bad percent escape) shows the whole page, no exception.
	cut := loadPage(t, filepath.Join(dir, "run.html"), "#plot=%E0%A4%A", 1600, 3000)
	if len(cut.console) > 0 || !strings.Contains(cut.dom, "data-height=") {
		t.Errorf("#plot=%%E0%%A4%%A stopped the page: %v", cut.console)
	}

	// Op names are the run's: ones that are also names of Object.prototype
	// are drawn like any other (issue 30 F11: "__proto__" vanished,
	// "constructor" read Object's constructor as its data).
	res, err := os.ReadFile(filepath.Join(dir, "res.json"))
	if err != nil {
		t.Fatal(err)
	}
	res = bytes.ReplaceAll(res, []byte(`"publish"`), []byte(`"__proto__"`))
	res = bytes.ReplaceAll(res, []byte(`"hot_reply"`), []byte(`"constructor"`))
	if err := os.WriteFile(filepath.Join(dir, "proto.json"), res, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runBin(t, dir, nil, "report", "-o", "proto.html", "proto.json"); code != 0 {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	checkPage(t, filepath.Join(dir, "proto.html"), []string{"op-__proto__-latency", "op-__proto__-rate", "op-constructor-rate"}, nil)
}
