package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LogPusher streams a local execution's log lines to the cloud (a Loki push
// endpoint the provisioning gave), as k6 v2.2 does: every push period one
// POST of {"streams":[{"stream":{"test_run_id":…},"values":[[ns, line]…]}]}
// with the test run's token, each line the message then its fields as
// k=v sorted by key, level among them (observed). Lines below the cloud's
// level are not sent; past its limit per push they are dropped and
// counted; the message is cut to its maximum size.
type LogPusher struct {
	cfg   LogsConfig
	token string
	run   string
	http  *http.Client
	min   int

	mu      sync.Mutex
	drained bool // lines after the drain are the run's last words, kept local as k6 keeps them
	pending [][2]string
	dropped int64
	lastErr error
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

var logLevels = map[string]int{"debug": 0, "info": 1, "warning": 2, "warn": 2, "error": 3}

// NewLogPusher makes the pusher of a provisioned run (nil when the cloud
// wants no logs).
func NewLogPusher(p *Provisioned) *LogPusher {
	if p == nil || p.Logs.PushURL == "" {
		return nil
	}
	min, ok := logLevels[strings.ToLower(p.Logs.Level)]
	if !ok {
		min = 1
	}
	l := &LogPusher{cfg: p.Logs, token: p.Token, run: strconv.FormatInt(p.TestRunID, 10),
		http: &http.Client{Timeout: 10 * time.Second}, min: min, stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

// Add takes one log line (level as the logger names it: debug, info,
// warning, error; fields as key, value pairs).
func (l *LogPusher) Add(t time.Time, level, msg string, fields []string) {
	if l == nil {
		return
	}
	if lv, ok := logLevels[level]; ok && lv < l.min {
		return
	}
	if max := int(l.cfg.MessageMaxSize); max > 0 && len(msg) > max {
		msg = msg[:max]
	}
	kv := make([]string, 0, len(fields)/2+1)
	for i := 0; i+1 < len(fields); i += 2 {
		kv = append(kv, fields[i]+"="+fields[i+1])
	}
	kv = append(kv, "level="+level)
	sort.Strings(kv)
	line := strings.TrimSpace(msg + " " + strings.Join(kv, " "))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drained {
		return
	}
	if l.cfg.Limit > 0 && int64(len(l.pending)) >= l.cfg.Limit {
		l.dropped++
		return
	}
	l.pending = append(l.pending, [2]string{strconv.FormatInt(t.UnixNano(), 10), line})
}

func (l *LogPusher) loop() {
	defer close(l.done)
	t := time.NewTicker(l.cfg.PushPeriod)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.push(context.Background())
		case <-l.stop:
			return
		}
	}
}

func (l *LogPusher) push(ctx context.Context) {
	l.mu.Lock()
	batch := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	body, _ := json.Marshal(map[string]any{"streams": []any{map[string]any{"stream": map[string]string{"test_run_id": l.run}, "values": batch}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.PushURL, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+l.token)
		var resp *http.Response
		if resp, err = l.http.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode < 200 || resp.StatusCode > 299 {
				err = fmt.Errorf("log push answered %s", resp.Status)
			}
		}
	}
	if err != nil {
		l.mu.Lock()
		l.dropped += int64(len(batch))
		l.lastErr = err
		l.mu.Unlock()
	}
}

// Drain stops the pusher and sends what is left (before the notify: the
// cloud refuses logs of a completed run). It says what was lost.
func (l *LogPusher) Drain(ctx context.Context) (dropped int64, err error) {
	if l == nil {
		return 0, nil
	}
	l.once.Do(func() { close(l.stop) })
	<-l.done
	l.mu.Lock()
	l.drained = true
	l.mu.Unlock()
	l.push(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped, l.lastErr
}
