// Package webdashboard is `--out web-dashboard` (k6's built-in web
// dashboard, also K6_WEB_DASHBOARD=true): a live page served while the run
// goes, fed by server-sent events, and the same page written as one
// self-contained file at the end (K6_WEB_DASHBOARD_EXPORT). Samples are
// aggregated per period (aggregate.go), so memory stays flat however long
// the run; the page is the caller's renderer's (cmd hands modules/report/htmlreport's), the one the run's HTML report,
// `buzzload report` and `compare -o` draw.
//
// Settings are k6's (docs: results-output/web-dashboard): the environment
// K6_WEB_DASHBOARD_HOST, _PORT (5665; -1 serves nothing), _PERIOD (10s),
// _OPEN, _EXPORT, and the output's own argument in query form
// (`--out web-dashboard=port=5666&period=2s&export=report.html`), which
// wins over the environment.
package webdashboard

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Name is the output's name in --out.
const Name = "web-dashboard"

// Config is the dashboard's settings.
type Config struct {
	// Host is the address the page is served on. k6 listens on every
	// interface by default; buzzload on loopback (a run's numbers, op names
	// and errors are not for the whole network): host=0.0.0.0 opens it.
	Host string
	// Port is the TCP port; 0 picks a free one, -1 serves nothing (the
	// export is still written).
	Port int
	// Period is how often samples become one point of every plot.
	Period time.Duration
	// Open starts the desktop's browser on the page (xdg-open).
	Open bool
	// Export is the file the page is written to at the end ("" none).
	Export string
}

// Enabled says whether the environment asks for the dashboard without
// --out (K6_WEB_DASHBOARD=true).
func Enabled(env map[string]string) bool {
	v, _ := strconv.ParseBool(env["K6_WEB_DASHBOARD"])
	return v
}

// Parse reads the settings from the environment, then from arg (the part
// after "web-dashboard=", in query form). A bad value is an error naming
// its key.
func Parse(arg string, env map[string]string) (Config, error) {
	c := Config{Host: "127.0.0.1", Port: 5665, Period: 10 * time.Second}
	set := func(key, v string) error {
		var err error
		switch key {
		case "host":
			c.Host = v
		case "port":
			c.Port, err = strconv.Atoi(v)
			if err == nil && (c.Port < -1 || c.Port > 65535) {
				err = fmt.Errorf("want 0-65535, or -1 for no server")
			}
		case "period":
			c.Period, err = time.ParseDuration(v)
			if err == nil && c.Period < 100*time.Millisecond {
				err = fmt.Errorf("want at least 100ms")
			}
		case "open":
			c.Open, err = strconv.ParseBool(v)
		case "export", "report":
			c.Export = v
		case "tags", "record":
			// k6's: tags to aggregate by, a recording of the events. Not
			// kept: the Buzz view aggregates by op and client kind.
		default:
			return fmt.Errorf("%s: unknown setting (have host, port, period, open, export)", key)
		}
		if err != nil {
			return fmt.Errorf("%s=%q: %w", key, v, err)
		}
		return nil
	}
	for _, key := range []string{"host", "port", "period", "open", "export"} {
		if v, ok := env["K6_WEB_DASHBOARD_"+strings.ToUpper(key)]; ok && v != "" {
			if err := set(key, v); err != nil {
				return c, fmt.Errorf("K6_WEB_DASHBOARD_%s: %w", strings.ToUpper(key), err)
			}
		}
	}
	if arg == "" {
		return c, nil
	}
	q, err := url.ParseQuery(arg)
	if err != nil {
		return c, fmt.Errorf("--out %s=%s: %w", Name, arg, err)
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	// In a fixed order, so the first bad key named is always the same.
	sort.Strings(keys)
	for _, k := range keys {
		if err := set(k, q.Get(k)); err != nil {
			return c, fmt.Errorf("--out %s: %w", Name, err)
		}
	}
	return c, nil
}
