package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// `cloud run --local-execution` (k6 v2.2): before the run, the test run is
// provisioned through Grafana Cloud k6's v6 and provisioning APIs; the run
// then pushes its metrics to the URL the cloud gave, with the test run's
// own token, streams its log lines, and notifies the cloud at the end
// instead of finishing the run (k6 v2.2.0 internal/cloudapi/provisioning,
// internal/cmd/outputs_cloud.go; observed against the capture server:
// TestCloudRunLocalExecutionAsK6Does).

// ProvisionParams are what the cloud is told of the run.
type ProvisionParams struct {
	Config Config
	// MaxVUs and TotalDuration are the plan's (graceful stops included).
	MaxVUs        int64
	TotalDuration time.Duration
	// Options is the consolidated options JSON (k6's options object).
	Options json.RawMessage
	// Archive is the test's archive (nil: --no-archive-upload).
	Archive []byte
	// Version is the runner's, for the User-Agent.
	Version string
	// PollInterval is how often the test run's status is read while it is
	// being prepared (k6: 2 s).
	PollInterval time.Duration
	// Warn receives the provisioning's warnings (nil: none).
	Warn func(string)
}

// Provisioned is a test run the cloud prepared for a local execution.
type Provisioned struct {
	TestRunID  int64
	DetailsURL string
	// PushURL and Token are where and how metrics and logs go (the test
	// run's token, not the user's).
	PushURL string
	Token   string
	// Aggregation settings the cloud chose (zero: the defaults).
	PushInterval, AggregationPeriod, AggregationWaitPeriod time.Duration
	PushConcurrency                                        int64
	// Logs is where the run's log lines go ("" when the cloud wants none).
	Logs LogsConfig
	// HostV6, StackID and userAgent are for the notify call at the end.
	HostV6    string
	StackID   int64
	userAgent string
	timeout   time.Duration
}

// LogsConfig is the runtime configuration of log streaming.
type LogsConfig struct {
	PushURL        string
	Level          string
	Limit          int64
	PushPeriod     time.Duration
	MessageMaxSize int64
}

// errNoLogin is k6 v2.2's text when the token or stack ID is missing.
const errNoLogin = "Running cloud tests requires auth settings: %s.\nRun `k6 cloud login` to authenticate, or check the docs for other options at https://grafana.com/docs/grafana-cloud/testing/k6/author-run/tokens-and-cli-authentication"

// CheckLogin is k6 v2.2's check before a cloud run: a token and a stack ID.
func CheckLogin(c Config) error {
	if c.Token == "" {
		//lint:ignore ST1005 k6's text, word for word
		return fmt.Errorf(errNoLogin, "access token not configured")
	}
	if c.StackID == 0 {
		//lint:ignore ST1005 k6's text, word for word
		return fmt.Errorf(errNoLogin, "stack ID not configured")
	}
	return nil
}

// Provision creates (or finds) the load test, starts its local execution,
// uploads the archive and waits until the cloud says the run may start.
func Provision(ctx context.Context, p ProvisionParams) (*Provisioned, error) {
	if err := CheckLogin(p.Config); err != nil {
		return nil, err
	}
	if p.PollInterval <= 0 {
		p.PollInterval = 2 * time.Second
	}
	c := v6client{http: &http.Client{Timeout: p.Config.Timeout}, host: strings.TrimRight(p.Config.HostV6, "/"),
		token: p.Config.Token, stack: p.Config.StackID, userAgent: userAgent(p.Version)}
	loadTest, err := c.createOrFindLoadTest(ctx, p.Config.ProjectID, p.Config.Name)
	if err != nil {
		return nil, c.redact(fmt.Errorf("create or find load test: %w", err))
	}
	var opts map[string]any
	if err := json.Unmarshal(p.Options, &opts); err != nil {
		return nil, fmt.Errorf("unmarshalling options: %w", err)
	}
	start := map[string]any{"options": opts, "max_vus": p.MaxVUs, "total_duration": int64(p.TotalDuration / time.Second), "archive_size": nil}
	if p.Archive != nil {
		start["archive_size"] = len(p.Archive)
	}
	body, _ := json.Marshal(start)
	var resp startResponse
	h := http.Header{"K6-Idempotency-Key": {idempotencyKey()}}
	if err := c.call(ctx, http.MethodPost, "/provisioning/v1/load_tests/"+strconv.FormatInt(loadTest, 10)+"/start_local_execution",
		"application/json", h, body, &resp, c.token); err != nil {
		return nil, c.redact(fmt.Errorf("start local execution: %w", err))
	}
	if resp.TestRunID == 0 || resp.RuntimeConfig.Metrics.PushURL == "" || resp.RuntimeConfig.TestRunToken == "" {
		return nil, errors.New("start local execution: the cloud's answer has no test run, push URL or token")
	}
	switch {
	case p.Archive != nil && resp.ArchiveUploadURL == nil:
		// k6 warns and goes on, in these words.
		if p.Warn != nil {
			p.Warn("archive present but provisioning API returned no upload URL; skipping archive upload")
		}
	case p.Archive != nil:
		if err := upload(ctx, c.http, *resp.ArchiveUploadURL, p.Archive); err != nil {
			return nil, fmt.Errorf("upload archive: %w", err)
		}
	}
	if err := c.waitReady(ctx, resp.TestRunID, p.PollInterval); err != nil {
		return nil, c.redact(fmt.Errorf("wait for test run ready: %w", err))
	}
	return resp.provisioned(p.Config, c.userAgent), nil
}

type startResponse struct {
	TestRunID        int64   `json:"test_run_id"`
	DetailsURL       string  `json:"test_run_details_page_url"`
	ArchiveUploadURL *string `json:"archive_upload_url"`
	RuntimeConfig    struct {
		TestRunToken string `json:"test_run_token"`
		Metrics      struct {
			PushURL               string  `json:"push_url"`
			PushInterval          *string `json:"push_interval"`
			PushConcurrency       *int64  `json:"push_concurrency"`
			AggregationPeriod     *string `json:"aggregation_period"`
			AggregationWaitPeriod *string `json:"aggregation_wait_period"`
		} `json:"metrics"`
		Logs struct {
			PushURL           string `json:"push_url"`
			Level             string `json:"level"`
			Limit             int64  `json:"limit"`
			PushPeriodSeconds string `json:"push_period_seconds"`
			MessageMaxSize    int64  `json:"message_max_size"`
		} `json:"logs"`
	} `json:"runtime_config"`
}

func (r startResponse) provisioned(cfg Config, ua string) *Provisioned {
	m := r.RuntimeConfig.Metrics
	p := &Provisioned{TestRunID: r.TestRunID, DetailsURL: r.DetailsURL, PushURL: m.PushURL, Token: r.RuntimeConfig.TestRunToken,
		HostV6: strings.TrimRight(cfg.HostV6, "/"), StackID: cfg.StackID, userAgent: ua, timeout: cfg.Timeout}
	p.PushInterval = positive(m.PushInterval, false)
	p.AggregationPeriod = positive(m.AggregationPeriod, true)
	p.AggregationWaitPeriod = positive(m.AggregationWaitPeriod, true)
	if m.PushConcurrency != nil && *m.PushConcurrency > 0 {
		p.PushConcurrency = *m.PushConcurrency
	}
	l := r.RuntimeConfig.Logs
	p.Logs = LogsConfig{PushURL: l.PushURL, Level: l.Level, Limit: l.Limit, MessageMaxSize: l.MessageMaxSize, PushPeriod: time.Second}
	if d, err := time.ParseDuration(l.PushPeriodSeconds); err == nil && d > 0 {
		p.Logs.PushPeriod = d
	}
	return p
}

// positive reads a cloud-given duration; an aggregation period must be
// whole seconds (the protocol carries them so). Anything else is zero: the
// default stays.
func positive(s *string, whole bool) time.Duration {
	if s == nil {
		return 0
	}
	d, err := time.ParseDuration(*s)
	if err != nil || d <= 0 || whole && d != d.Truncate(time.Second) {
		return 0
	}
	return d
}

// v6client is the part of the v6 and provisioning APIs a local execution
// uses: `Authorization: Bearer <token>`, `X-Stack-Id`, k6's User-Agent.
type v6client struct {
	http      *http.Client
	host      string
	token     string
	stack     int64
	userAgent string
}

func (c v6client) createOrFindLoadTest(ctx context.Context, project int64, name string) (int64, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("name", name)
	_ = mw.Close()
	var lt struct {
		ID int64 `json:"id"`
	}
	path := "/cloud/v6/projects/" + strconv.FormatInt(project, 10) + "/load_tests"
	err := c.call(ctx, http.MethodPost, path, mw.FormDataContentType(), nil, body.Bytes(), &lt, c.token)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		// It exists: k6 takes the first of that name.
		var list struct {
			Value []struct {
				ID int64 `json:"id"`
			} `json:"value"`
		}
		q := url.Values{"name": {name}, "$top": {"1"}}
		if err := c.call(ctx, http.MethodGet, path+"?"+q.Encode(), "", nil, nil, &list, c.token); err != nil {
			return 0, err
		}
		if len(list.Value) == 0 {
			return 0, errors.New("the load test exists but could not be found by its name")
		}
		return list.Value[0].ID, nil
	}
	if err != nil {
		return 0, err
	}
	return lt.ID, nil
}

// waitReady polls the test run until it is "initializing" (ready for k6).
func (c v6client) waitReady(ctx context.Context, id int64, every time.Duration) error {
	for {
		var tr struct {
			Status        string `json:"status"`
			StatusHistory []struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"status_history"`
		}
		if err := c.call(ctx, http.MethodGet, "/cloud/v6/test_runs/"+strconv.FormatInt(id, 10), "", nil, nil, &tr, c.token); err != nil {
			return fmt.Errorf("fetching test status: %w", err)
		}
		switch tr.Status {
		case "initializing":
			return nil
		case "aborted":
			for _, h := range tr.StatusHistory {
				if h.Type == "aborted" && h.Message != "" {
					return fmt.Errorf("test run aborted before starting: %s", h.Message)
				}
			}
			return errors.New("test run aborted before starting")
		case "completed":
			return errors.New("test run completed before k6 could start")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

func (c v6client) call(ctx context.Context, method, path, ctype string, extra http.Header, body []byte, into any, token string) error {
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Stack-Id", strconv.FormatInt(c.stack, 10))
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return responseError(resp.StatusCode, data)
	}
	if into != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("%s: the cloud's answer is not the JSON expected: %w", path, err)
		}
	}
	return nil
}

func (c v6client) redact(err error) error {
	if err == nil || c.token == "" {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.token, "***"))
}

func upload(ctx context.Context, hc *http.Client, to string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, to, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if len(b) == 0 {
			return fmt.Errorf("archive upload failed: %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		return fmt.Errorf("archive upload failed: %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), b)
	}
	return nil
}

// Notify tells the cloud the script's execution completed: error is null
// for a run that ended by itself (thresholds crossed included), else k6's
// code and reason (8036 aborted by the user, the script or a threshold,
// 8035 a script error, 8034 a timeout or an output, 0 anything else).
func (p *Provisioned) Notify(ctx context.Context, code int32, reason string, failed bool) error {
	body := map[string]any{"event_type": "script_execution_completed", "error": nil}
	if failed {
		body["error"] = map[string]any{"code": code, "reason": reason}
	}
	b, _ := json.Marshal(body)
	c := v6client{http: &http.Client{Timeout: p.timeout}, host: p.HostV6, stack: p.StackID, userAgent: p.userAgent, token: p.Token}
	err := c.call(ctx, http.MethodPost, "/provisioning/v1/test_runs/"+strconv.FormatInt(p.TestRunID, 10)+"/notify", "application/json", nil, b, nil, p.Token)
	if err != nil {
		return c.redact(fmt.Errorf("notify test run completed: %w", err))
	}
	return nil
}
