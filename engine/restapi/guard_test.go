package restapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// What a web page can send is refused before it reaches the API; what the
// operator, kubelet and curl send passes (reliability.md F2: a page stopped
// a run through POST /v1/teardown and a rebinding-shaped PATCH /v1/status).
// Fails without Guard.
func TestGuardRefusesPagesKeepsOperator(t *testing.T) {
	reached := 0
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached++; w.WriteHeader(http.StatusOK) }), "runner.local")
	cases := []struct {
		name, method, host string
		hdr                map[string]string
		want               int
	}{
		{"operator starter curl to the service IP", "PATCH", "10.96.0.12:6565", map[string]string{"Content-Type": "application/json"}, 200},
		{"operator Go client: setup without Content-Type", "POST", "10.96.0.12:6565", nil, 200},
		{"operator Go client: PUT setup data", "PUT", "[fd00::12]:6565", nil, 200},
		{"kubelet probe to the pod IP", "GET", "10.244.0.7:6565", map[string]string{"User-Agent": "kube-probe/1.31"}, 200},
		{"curl on the machine", "GET", "localhost:6565", nil, 200},
		{"the --address host name", "PATCH", "Runner.Local.:6565", map[string]string{"Content-Type": "application/vnd.api+json"}, 200},
		{"DNS rebinding: the page's own name", "PATCH", "evil.example:6565", map[string]string{"Content-Type": "application/json"}, 403},
		{"cross-origin form post to teardown", "POST", "127.0.0.1:6565", map[string]string{"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, 403},
		{"fetch no-cors with a Blob (no type) from a page", "POST", "127.0.0.1:6565", map[string]string{"Origin": "null"}, 403},
		{"a page's GET (fetch metadata)", "GET", "127.0.0.1:6565", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"text/plain body without Origin", "POST", "127.0.0.1:6565", map[string]string{"Content-Type": "text/plain"}, 415},
		{"multipart body", "PUT", "127.0.0.1:6565", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415},
	}
	for _, c := range cases {
		before := reached
		req := httptest.NewRequest(c.method, "/v1/status", strings.NewReader("{}"))
		req.Host = c.host
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, rec.Code, c.want, rec.Body.String())
		}
		if got := reached > before; got != (c.want == 200) {
			t.Errorf("%s: reached the API = %v", c.name, got)
		}
		if c.want != 200 && !strings.Contains(rec.Body.String(), `"errors"`) {
			t.Errorf("%s: not a JSON:API error: %s", c.name, rec.Body.String())
		}
	}
}
