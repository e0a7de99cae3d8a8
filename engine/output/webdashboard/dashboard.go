package webdashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/outfile"
	"github.com/buzzload/buzzload/engine/restapi"
)

// Dashboard is the output: Start serves the page, AddSamples aggregates,
// Stop closes the last period, Finish writes the export and tells the
// browsers the run is over.
type Dashboard struct {
	cfg   Config
	title string
	warn  func(string)
	view  View

	agg  *aggregator
	srv  *http.Server
	ln   net.Listener
	url  string
	tick *time.Ticker
	quit chan struct{}
	wg   sync.WaitGroup // the server
	tw   sync.WaitGroup // the periods' goroutine

	mu      sync.Mutex
	subs    map[chan []byte]struct{}
	stopped bool
	final   []byte // the final page's data, once Finish ran
	once    sync.Once
}

// View is what the caller's renderer gives the dashboard: the page's HTML
// (Render writes it from the page's data, Page as JSON; the live page and
// the export are one design) and the metrics its operation view reads. The
// engine draws nothing of its own: cmd hands the Buzz report's page.
type View struct {
	Render func(w io.Writer, page []byte) error
	Ops    OpMetrics
}

// Page is the page's data: the runs it shows and, live, the event stream
// it follows ("" once the run is over).
type Page struct {
	Title string `json:"title"`
	Runs  []Run  `json:"runs"`
	Live  string `json:"live,omitempty"`
}

// Run is one run on the page: its periods and, at the end, the report the
// caller handed Finish (JSON, shown as it is).
type Run struct {
	Label   string          `json:"label"`
	File    string          `json:"file"`
	Report  json.RawMessage `json:"report,omitempty"`
	Metrics *Metrics        `json:"metrics,omitempty"`
}

// Metrics are a run's periods.
type Metrics struct {
	PeriodS float64  `json:"period_s"`
	Windows []Window `json:"windows"`
}

// New makes the dashboard of a run titled title (the script's name).
func New(cfg Config, title string, warn func(string), view View) *Dashboard {
	if warn == nil {
		warn = func(m string) { fmt.Fprintln(os.Stderr, m) }
	}
	return &Dashboard{cfg: cfg, title: title, warn: warn, view: view, subs: map[chan []byte]struct{}{}, quit: make(chan struct{})}
}

// write renders page as HTML.
func (d *Dashboard) write(w io.Writer, page Page) error {
	if d.view.Render == nil {
		return fmt.Errorf("--out %s: no page renderer", Name)
	}
	raw, err := json.Marshal(page)
	if err != nil {
		return err
	}
	return d.view.Render(w, raw)
}

// URL is the live page's address ("" without a server).
func (d *Dashboard) URL() string { return d.url }

// Start listens (before the run, so the banner can give the address) and
// starts the periods.
func (d *Dashboard) Start() error {
	if d.cfg.Export != "" {
		if err := outfile.Check(d.cfg.Export); err != nil {
			return fmt.Errorf("--out %s: export %s cannot be written: %w", Name, d.cfg.Export, err)
		}
	}
	d.agg = newAggregator(time.Now(), d.view.Ops)
	if d.cfg.Port >= 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(d.cfg.Host, strconv.Itoa(d.cfg.Port)))
		if err != nil {
			return fmt.Errorf("--out %s: %w", Name, err)
		}
		d.ln = ln
		host := d.cfg.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		d.url = "http://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		mux := http.NewServeMux()
		mux.HandleFunc("GET /{$}", d.servePage)
		mux.HandleFunc("GET /events", d.serveEvents)
		// The REST API's Host rule (issue 43 L4): a DNS-rebinding page
		// (its own name resolved to 127.0.0.1) could read the live metrics.
		configured := d.cfg.Host
		guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !restapi.HostAllowed(r.Host, configured) {
				http.Error(w, "the web dashboard answers only requests addressed to an IP, localhost or its host", http.StatusForbidden)
				return
			}
			mux.ServeHTTP(w, r)
		})
		d.srv = &http.Server{Handler: guarded, ReadHeaderTimeout: 10 * time.Second}
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.warn("web dashboard: " + err.Error())
			}
		}()
		if d.cfg.Open {
			if err := exec.Command("xdg-open", d.url).Start(); err != nil {
				d.warn("web dashboard: cannot open a browser: " + err.Error())
			}
		}
	}
	d.tick = time.NewTicker(d.cfg.Period)
	d.tw.Add(1)
	go func() {
		defer d.tw.Done()
		for {
			select {
			case now := <-d.tick.C:
				d.publish(d.agg.close(now))
			case <-d.quit:
				return
			}
		}
	}()
	return nil
}

// AddSamples implements the engine's output: the samples are aggregated
// at once (a few map updates), nothing is kept per sample.
func (d *Dashboard) AddSamples(samples []metrics.Sample) { d.agg.add(samples) }

// Stop closes the last period. The server stays up for Finish.
func (d *Dashboard) Stop() error {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return nil
	}
	d.stopped = true
	d.mu.Unlock()
	if d.tick == nil {
		return nil // never started
	}
	d.tick.Stop()
	close(d.quit)
	d.tw.Wait() // no period closes after this one
	d.publish(d.agg.closeLast(time.Now(), d.cfg.Period))
	return nil
}

// Finish writes the export (the whole run on the same page, with the Buzz
// report when the run has one: its steps, verdict and checks), sends it
// to the open pages as the final state and stops the server. It runs once;
// report may be nil.
func (d *Dashboard) Finish(report json.RawMessage) error {
	var err error
	d.once.Do(func() {
		if d.agg == nil {
			return // never started
		}
		_ = d.Stop()
		page := d.page(report, false)
		raw, merr := json.Marshal(page)
		if merr != nil {
			err = merr
			return
		}
		d.mu.Lock()
		d.final = raw
		d.mu.Unlock()
		d.broadcast(event("final", raw))
		if d.cfg.Export != "" {
			var b bytes.Buffer
			if werr := d.write(&b, page); werr != nil {
				err = werr
			} else if werr := os.WriteFile(d.cfg.Export, b.Bytes(), 0o644); werr != nil {
				err = fmt.Errorf("--out %s: export: %w", Name, werr)
			}
		}
		if d.srv != nil {
			// Let the pages read the final event, then close them.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			d.closeSubs()
			_ = d.srv.Shutdown(ctx)
			cancel()
		}
		d.wg.Wait()
	})
	return err
}

// page is the page's data: one run with the periods so far and, at the
// end, the Buzz report.
func (d *Dashboard) page(report json.RawMessage, live bool) Page {
	ws := d.agg.windows()
	if ws == nil {
		ws = []Window{}
	}
	run := Run{Label: d.title, File: d.title, Metrics: &Metrics{PeriodS: d.cfg.Period.Seconds(), Windows: ws}}
	if report != nil {
		run.Report = report
	}
	p := Page{Title: "buzzload run: " + d.title, Runs: []Run{run}}
	if live {
		p.Live = "/events"
	}
	return p
}

func (d *Dashboard) servePage(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	if err := d.write(&b, d.page(nil, true)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// serveEvents is the event stream: "window" per period, "final" at the
// end. A browser that connects late loaded the periods so far with the
// page; it gets every later one here.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ch := make(chan []byte, 64)
	d.mu.Lock()
	final := d.final
	if final == nil {
		d.subs[ch] = struct{}{}
	}
	d.mu.Unlock()
	if final != nil {
		_, _ = w.Write(event("final", final))
		fl.Flush()
		return
	}
	defer func() {
		d.mu.Lock()
		delete(d.subs, ch)
		d.mu.Unlock()
	}()
	// The configuration at once, as k6's dashboard sends its own when a
	// browser connects (issue 46): a live page learns the period and how
	// many windows it should have before the next one closes.
	_, _ = w.Write(event("config", d.configEvent()))
	fl.Flush()
	for {
		select {
		case msg, open := <-ch:
			if !open {
				return
			}
			if _, err := w.Write(msg); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// configEvent is the "config" event's data: the title, the period, when
// the run's clock started and the windows closed so far.
func (d *Dashboard) configEvent() []byte {
	b, _ := json.Marshal(struct {
		Title   string  `json:"title"`
		PeriodS float64 `json:"period_s"`
		Windows int     `json:"windows"`
	}{d.title, d.cfg.Period.Seconds(), len(d.agg.windows())})
	return b
}

func (d *Dashboard) publish(w Window) {
	raw, err := json.Marshal(w)
	if err != nil {
		return
	}
	d.broadcast(event("window", raw))
}

// broadcast hands msg to every page; one too slow to keep up (64 behind)
// misses it rather than holding the run.
func (d *Dashboard) broadcast(msg []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ch := range d.subs {
		select {
		case ch <- msg:
		default:
		}
	}
}

func (d *Dashboard) closeSubs() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ch := range d.subs {
		close(ch)
		delete(d.subs, ch)
	}
}

// event is one server-sent event: the data is JSON on one line.
func event(name string, data []byte) []byte {
	b := make([]byte, 0, len(data)+len(name)+16)
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}
