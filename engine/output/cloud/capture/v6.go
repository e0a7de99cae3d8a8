package capture

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// The v6 and provisioning APIs of a `cloud run --local-execution`, as k6
// v2.2.0 was observed to use them against this stand-in (every field its
// API client requires is in the answers): the load test is created (or,
// with LoadTestExists, found by name after a 409), its local execution
// started, the archive uploaded, the test run read until "initializing",
// metrics pushed to /v2/metrics/<RefID> with the run's token, log lines
// to /loki/api/v1/push, and the run notified.

// TestRunToken is the token the stand-in gives the provisioned run.
const TestRunToken = "trt-capture-never-printed"

var (
	reLoadTests = regexp.MustCompile(`^/cloud/v6/projects/(\d+)/load_tests$`)
	reStart     = regexp.MustCompile(`^/provisioning/v1/load_tests/(\d+)/start_local_execution$`)
)

func (s *Server) serveV6(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	js := func(code int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
	loadTest := `{"id":501,"project_id":%s,"name":"probe","baseline_test_run_id":null,"created":"2026-12-06T00:00:00Z","updated":"2026-12-06T00:00:00Z"}`
	switch {
	case r.Method == http.MethodPost && reLoadTests.MatchString(p):
		s.mu.Lock()
		exists := s.LoadTestExists
		s.mu.Unlock()
		if exists {
			js(http.StatusConflict, `{"error":{"code":"conflict","message":"a load test with this name exists"}}`)
			return true
		}
		js(http.StatusCreated, fmt.Sprintf(loadTest, reLoadTests.FindStringSubmatch(p)[1]))
	case r.Method == http.MethodGet && reLoadTests.MatchString(p):
		js(http.StatusOK, `{"value":[`+fmt.Sprintf(loadTest, reLoadTests.FindStringSubmatch(p)[1])+`]}`)
	case r.Method == http.MethodPost && reStart.MatchString(p):
		u := s.URL
		s.mu.Lock()
		upload := fmt.Sprintf("%q", u+"/archive-upload/"+s.RefID)
		if s.NoArchiveUpload {
			upload = "null"
		}
		s.mu.Unlock()
		js(http.StatusOK, fmt.Sprintf(`{"test_run_id":%s,"test_run_details_page_url":%q,"archive_upload_url":%s,
 "runtime_config":{"test_run_token":%q,
  "metrics":{"push_url":%q,"push_interval":"1s","push_concurrency":1,"aggregation_period":"1s","aggregation_wait_period":"1s","aggregation_min_samples":null,"max_samples_per_package":null},
  "traces":{"push_url":%q,"traces_metadata":{},"proto":"grpc"},
  "files":{"push_url":%q,"screenshots_base_path":"s","headers":{},"method":"PUT"},
  "secrets":{"endpoint":%q,"response_path":"plaintext"},
  "logs":{"push_url":%q,"tail_url":%q,"level":"info","limit":100,"push_period_seconds":"1s","message_max_size":2048,"allowed_labels":[]}}}`,
			s.RefID, u+"/runs/"+s.RefID, upload, TestRunToken, u+"/v2/metrics/"+s.RefID, u+"/traces", u+"/files",
			u+"/secrets/{key}", u+"/loki/api/v1/push", u+"/tail"))
	case r.Method == http.MethodPut && strings.HasPrefix(p, "/archive-upload/"):
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/cloud/v6/test_runs/"):
		s.mu.Lock()
		status := "initializing"
		if len(s.RunStatuses) > 0 {
			status = s.RunStatuses[0]
			if len(s.RunStatuses) > 1 { // the last one stays
				s.RunStatuses = s.RunStatuses[1:]
			}
		}
		result := s.RunResult
		s.mu.Unlock()
		js(http.StatusOK, s.testRun(status, result, ""))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/cloud/v6/test_runs/") && strings.HasSuffix(p, "/abort"):
		s.mu.Lock()
		s.RunStatuses = []string{"aborted"}
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && p == "/cloud/v6/validate_options":
		js(http.StatusOK, `{}`)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/cloud/v6/load_tests/") && strings.HasSuffix(p, "/start"):
		js(http.StatusOK, s.testRun("created", "", s.URL+"/runs/"+s.RefID))
	case r.Method == http.MethodPost && p == "/loki/api/v1/push":
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/provisioning/v1/test_runs/") && strings.HasSuffix(p, "/notify"):
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}

// testRun is a v6 test run with every field k6's client requires; result
// "" is null; details adds test_run_details_page_url (a start's answer).
func (s *Server) testRun(status, result, details string) string {
	res := "null"
	if result != "" {
		res = fmt.Sprintf("%q", result)
	}
	extra := ""
	if details != "" {
		extra = fmt.Sprintf(`,"test_run_details_page_url":%q`, details)
	}
	return fmt.Sprintf(`{"id":%s,"test_id":501,"project_id":77,"started_by":"capture","created":"2026-12-06T00:00:00Z","ended":null,
 "note":"","retention_expiry":null,"cost":null,"status":%q,"status_details":{"type":%q,"entered":"2026-12-06T00:00:00Z"},
 "status_history":[{"type":%q,"entered":"2026-12-06T00:00:00Z"}],"distribution":null,"result":%s,"result_details":null,
 "options":null,"k6_dependencies":{},"k6_versions":{},"max_vus":null,"max_browser_vus":null,"estimated_duration":10,"execution_duration":0,"is_starred":false%s}`,
		s.RefID, status, status, status, res, extra)
}
