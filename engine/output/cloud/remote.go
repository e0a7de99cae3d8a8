package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// `cloud run` without --local-execution (k6 v2.2 internal/cmd/cloud.go,
// observed against the capture server's v6 stand-in): the options are
// validated, the archive uploaded as the load test's script, the load test
// started on the cloud's own k6, and its test run polled until it ends.
// The exit code comes from its result: "failed" (thresholds) 99, "error"
// 97 (k6's CloudTestRunFailed).

// Remote is a cloud session of one remote test run.
type Remote struct {
	c v6client
}

// NewRemote checks the login and makes the session.
func NewRemote(cfg Config, version string) (*Remote, error) {
	if err := CheckLogin(cfg); err != nil {
		return nil, err
	}
	return &Remote{c: v6client{http: &http.Client{Timeout: cfg.Timeout}, host: strings.TrimRight(cfg.HostV6, "/"),
		token: cfg.Token, stack: cfg.StackID, userAgent: userAgent(version)}}, nil
}

// Validate asks the cloud whether it takes the options.
func (r *Remote) Validate(ctx context.Context, project int64, options json.RawMessage) error {
	body, _ := json.Marshal(map[string]any{"is_local_execution": false, "options": options, "project_id": project})
	return r.c.redact(r.c.call(ctx, http.MethodPost, "/cloud/v6/validate_options", "application/json", nil, body, nil, r.c.token))
}

// Upload creates the load test with the archive as its script, or replaces
// the script of the load test of that name.
func (r *Remote) Upload(ctx context.Context, project int64, name string, archive []byte) (int64, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("name", name)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="script"; filename="script"`)
	h.Set("Content-Type", "application/octet-stream")
	part, _ := mw.CreatePart(h)
	_, _ = part.Write(archive)
	_ = mw.Close()
	var lt struct {
		ID int64 `json:"id"`
	}
	path := "/cloud/v6/projects/" + strconv.FormatInt(project, 10) + "/load_tests"
	err := r.c.call(ctx, http.MethodPost, path, mw.FormDataContentType(), nil, body.Bytes(), &lt, r.c.token)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		return lt.ID, r.c.redact(err)
	}
	var list struct {
		Value []struct {
			ID int64 `json:"id"`
		} `json:"value"`
	}
	q := url.Values{"name": {name}, "$top": {"1"}}
	if err := r.c.call(ctx, http.MethodGet, path+"?"+q.Encode(), "", nil, nil, &list, r.c.token); err != nil {
		return 0, r.c.redact(err)
	}
	if len(list.Value) == 0 {
		return 0, errors.New("the load test exists but could not be found by its name")
	}
	id := list.Value[0].ID
	err = r.c.call(ctx, http.MethodPut, "/cloud/v6/load_tests/"+strconv.FormatInt(id, 10)+"/script", "application/octet-stream", nil, archive, nil, r.c.token)
	return id, r.c.redact(err)
}

// Start starts the load test: its test run's id and page.
func (r *Remote) Start(ctx context.Context, loadTest int64) (run int64, details string, err error) {
	var resp struct {
		ID         int64  `json:"id"`
		DetailsURL string `json:"test_run_details_page_url"`
	}
	h := http.Header{"K6-Idempotency-Key": {idempotencyKey()}}
	err = r.c.call(ctx, http.MethodPost, "/cloud/v6/load_tests/"+strconv.FormatInt(loadTest, 10)+"/start", "", h, nil, &resp, r.c.token)
	return resp.ID, resp.DetailsURL, r.c.redact(err)
}

// Progress is a remote test run's state.
type Progress struct {
	Status string `json:"status"`
	Result string `json:"result"`
	// Estimated and Executed are seconds.
	Estimated     int64 `json:"estimated_duration"`
	Executed      int64 `json:"execution_duration"`
	StatusHistory []struct {
		Type   string `json:"type"`
		ByUser string `json:"by_user"`
	} `json:"status_history"`
}

// Finished says the run ended (completed or aborted).
func (p Progress) Finished() bool { return p.Status == "completed" || p.Status == "aborted" }

// FormatStatus is k6's wording: "Finished" for completed, "Aborted (by
// user)", else the status's words capitalised ("Processing Metrics").
func (p Progress) FormatStatus() string {
	for _, h := range p.StatusHistory {
		if h.Type == "aborted" && h.ByUser != "" {
			return "Aborted (by user)"
		}
	}
	if p.Status == "completed" {
		return "Finished"
	}
	words := strings.Split(p.Status, "_")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// Fetch reads the test run.
func (r *Remote) Fetch(ctx context.Context, run int64) (Progress, error) {
	var p Progress
	err := r.c.call(ctx, http.MethodGet, "/cloud/v6/test_runs/"+strconv.FormatInt(run, 10), "", nil, nil, &p, r.c.token)
	return p, r.c.redact(err)
}

// Abort asks the cloud to stop the test run.
func (r *Remote) Abort(ctx context.Context, run int64) error {
	return r.c.redact(r.c.call(ctx, http.MethodPost, "/cloud/v6/test_runs/"+strconv.FormatInt(run, 10)+"/abort", "", nil, nil, nil, r.c.token))
}

// Wait polls the run every `every` until it ends, calling seen on every
// change of status; when ctx ends it asks the cloud to abort once and goes
// on waiting for the end, as k6 does.
func (r *Remote) Wait(ctx context.Context, run int64, every time.Duration, seen func(Progress)) (Progress, error) {
	var last string
	bg := context.WithoutCancel(ctx)
	stop := ctx.Done() // nil once the abort is asked: then only the poll's timer
	for {
		p, err := r.Fetch(bg, run)
		if err != nil {
			//lint:ignore ST1005 k6's text, word for word
			return p, fmt.Errorf("Test progress error: %w", err)
		}
		if p.Status != last {
			seen(p)
			last = p.Status
		}
		if p.Finished() {
			return p, nil
		}
		if stop != nil && ctx.Err() != nil {
			stop = nil
			if err := r.Abort(bg, run); err != nil {
				return p, fmt.Errorf("Stop cloud test error: %w", err)
			}
		}
		select {
		case <-stop:
		case <-time.After(every):
		}
	}
}
