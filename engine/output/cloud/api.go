package cloud

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// client speaks the cloud's test-run API as k6 v1.8.1 does (observed
// against a capture server): JSON bodies, `Authorization: Token <token>`,
// `User-Agent: k6cloud/<version>`, a fresh `K6-Idempotency-Key` (16 hex
// digits) on every request, up to 3 attempts 500 ms apart for network
// errors, 5xx and 429.
type client struct {
	http      *http.Client
	host      string // K6_CLOUD_HOST, no trailing slash
	token     string
	userAgent string
	retryWait time.Duration
	// pushURL and bearer are a provisioned local execution's (k6 v2.2
	// `cloud run --local-execution`): pushes go to that URL with
	// `Authorization: Bearer <test run token>` and no idempotency key
	// (observed).
	pushURL string
	bearer  bool
}

const attempts = 3

// RunStatus is the cloud's run_status of a finished test run.
type RunStatus int

// The run statuses k6 sends at the end (cloudapi's RunStatus).
const (
	RunFinished           RunStatus = 3
	RunAbortedUser        RunStatus = 5
	RunAbortedSystem      RunStatus = 6
	RunAbortedScriptError RunStatus = 7
	RunAbortedThreshold   RunStatus = 8
	RunAbortedLimit       RunStatus = 9
)

// createRequest is the body of POST /v1/tests.
type createRequest struct {
	Name       string              `json:"name"`
	ProjectID  int64               `json:"project_id,omitempty"`
	VUs        int64               `json:"vus"`
	Thresholds map[string][]string `json:"thresholds"`
	Duration   int64               `json:"duration"`
}

// createResponse is what the cloud answers; its config overrides the
// aggregation settings, as k6 applies it.
type createResponse struct {
	ReferenceID string `json:"reference_id"`
	Config      *struct {
		AggregationPeriod     *duration `json:"aggregationPeriod"`
		AggregationWaitPeriod *duration `json:"aggregationWaitPeriod"`
		MetricPushInterval    *duration `json:"metricPushInterval"`
		MetricPushConcurrency *int64    `json:"metricPushConcurrency"`
		MaxTimeSeriesInBatch  *int64    `json:"maxTimeSeriesInBatch"`
	} `json:"config"`
	Logs []struct {
		Level   string `json:"level"`
		Message string `json:"message"`
	} `json:"logs"`
}

// finishRequest is the body of POST /v1/tests/<ref>.
type finishRequest struct {
	ResultStatus int                        `json:"result_status"`
	RunStatus    RunStatus                  `json:"run_status"`
	Thresholds   map[string]map[string]bool `json:"thresholds"`
}

func (c *client) createTestRun(ctx context.Context, req createRequest) (createResponse, error) {
	var resp createResponse
	body, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	if err := c.do(ctx, c.host+"/v1/tests", "application/json", nil, body, &resp); err != nil {
		return resp, err
	}
	if resp.ReferenceID == "" {
		return resp, errors.New("failed to get a reference ID")
	}
	return resp, nil
}

func (c *client) finishTestRun(ctx context.Context, ref string, req finishRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.do(ctx, c.host+"/v1/tests/"+ref, "application/json", nil, body, nil)
}

// pushMetrics sends one snappy-compressed MetricSet.
func (c *client) pushMetrics(ctx context.Context, ref string, body []byte) error {
	h := http.Header{}
	h.Set("Content-Encoding", "snappy")
	h.Set("K6-Metrics-Protocol-Version", "2.0")
	if c.pushURL != "" {
		return c.do(ctx, c.pushURL, "application/x-protobuf", h, body, nil)
	}
	return c.do(ctx, c.host+"/v2/metrics/"+ref, "application/x-protobuf", h, body, nil)
}

func (c *client) do(ctx context.Context, url, contentType string, extra http.Header, body []byte, into any) error {
	// One key for every attempt of a request: that is what lets the cloud
	// drop a retried push it already took.
	key := idempotencyKey()
	var last error
	for attempt := 1; attempt <= attempts; attempt++ {
		retry, err := c.once(ctx, url, contentType, key, extra, body, into)
		if err == nil || !retry || attempt == attempts {
			return c.redact(err)
		}
		last = err
		select {
		case <-ctx.Done():
			return c.redact(last)
		case <-time.After(c.retryWait):
		}
	}
	return c.redact(last)
}

func (c *client) once(ctx context.Context, url, contentType, key string, extra http.Header, body []byte, into any) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	switch {
	case c.bearer:
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.token != "":
		req.Header.Set("Authorization", "Token "+c.token)
	}
	if !c.bearer {
		req.Header.Set("K6-Idempotency-Key", key)
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return true, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, responseError(resp.StatusCode, data)
	}
	if into != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, into); err != nil {
			return false, fmt.Errorf("%s: the cloud's answer is not the JSON expected: %w", url, err)
		}
	}
	return false, nil
}

// redact keeps the token out of any error text (a host that echoes it).
func (c *client) redact(err error) error {
	if err == nil || c.token == "" || !strings.Contains(err.Error(), c.token) {
		return err
	}
	var ae *APIError
	if errors.As(err, &ae) { // keep status and code: 403 E4 still stops the pushes
		red := *ae
		red.Message = strings.ReplaceAll(ae.Message, c.token, "***")
		return &red
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.token, "***"))
}

func idempotencyKey() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// APIError is a refusal from the cloud, written as k6 writes it:
// "(403/E4) message\n detail: ...".
type APIError struct {
	Status  int
	Code    int
	Message string
}

func (e *APIError) Error() string {
	code := fmt.Sprint(e.Status)
	if e.Code > 0 {
		code = fmt.Sprintf("%d/E%d", e.Status, e.Code)
	}
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("(%s) %s", code, e.Message)
}

// responseError reads the cloud's {"error": {...}} body; without one, k6's
// texts for 401, 403 and the rest.
func responseError(status int, body []byte) error {
	var payload struct {
		Error *struct {
			Code        int                 `json:"code"`
			Message     string              `json:"message"`
			Details     map[string][]string `json:"details"`
			FieldErrors map[string][]string `json:"field_errors"`
			Errors      []string            `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &payload) != nil || payload.Error == nil {
		switch status {
		case http.StatusUnauthorized:
			return &APIError{Status: status, Message: "failed to authenticate with k6 Cloud"}
		case http.StatusForbidden:
			return &APIError{Status: status, Message: "not allowed to upload result to k6 Cloud"}
		}
		return &APIError{Status: status, Message: "unexpected HTTP error: " + http.StatusText(status)}
	}
	p := payload.Error
	msg := p.Message
	for _, e := range p.Errors {
		if e != msg {
			msg += "\n " + e
		}
	}
	var details []string
	for _, m := range []map[string][]string{p.Details, p.FieldErrors} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			d := k + ": " + strings.Join(m[k], ", ")
			if !contains(details, d) {
				details = append(details, d)
			}
		}
	}
	if len(details) > 0 {
		msg += "\n " + strings.Join(details, "\n")
	}
	return &APIError{Status: status, Code: p.Code, Message: msg}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
