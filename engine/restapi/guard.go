// The REST API's guard against web pages (issue 30 F2, docs/security.md).
// k6 answers any request that reaches its port; a page in a browser on the
// same machine can then stop a run (a form POST to /v1/teardown) or, through
// DNS rebinding (its own name resolved to 127.0.0.1), PATCH /v1/status. The
// guard refuses what only a browser sends and keeps what the operator and
// curl send working: grafana/k6-operator's starter (curl with
// Content-Type: application/json to the runner service's IP), its Go client
// for setup/teardown (no Content-Type at all) and kubelet probes (pod IP).

package restapi

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// Guard wraps h so that it answers only requests addressed to this API:
//   - Host must be an IP literal, localhost (or *.localhost) or one of
//     names (the --address host); a rebinding page's Host is its own name;
//   - a request carrying Origin, or Sec-Fetch-Site other than none or
//     same-origin, came from a page and is refused;
//   - POST, PUT and PATCH must carry a JSON content type or none: the form
//     and text types a page can send without a CORS preflight are refused.
func Guard(h http.Handler, names ...string) http.Handler {
	allowed := map[string]bool{}
	for _, n := range names {
		if n = strings.TrimSuffix(strings.ToLower(n), "."); n != "" {
			allowed[n] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, allowed) {
			writeError(w, http.StatusForbidden, "Forbidden host",
				"the REST API answers only requests addressed to an IP, localhost or its --address host")
			return
		}
		if r.Header.Get("Origin") != "" || crossSite(r.Header.Get("Sec-Fetch-Site")) {
			writeError(w, http.StatusForbidden, "Forbidden origin", "the REST API does not answer web pages")
			return
		}
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if !jsonOrNone(r.Header.Get("Content-Type")) {
				writeError(w, http.StatusUnsupportedMediaType, "Unsupported media type",
					"send application/json (or no Content-Type)")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// HostAllowed is Guard's Host rule for another server of the run (the web
// dashboard): an IP literal, localhost (or *.localhost) or one of names.
func HostAllowed(hostport string, names ...string) bool {
	allowed := map[string]bool{}
	for _, n := range names {
		if n = strings.TrimSuffix(strings.ToLower(n), "."); n != "" {
			allowed[n] = true
		}
	}
	return hostAllowed(hostport, allowed)
}

func hostAllowed(hostport string, names map[string]bool) bool {
	if hostport == "" {
		return true // HTTP/1.0 without Host: not a browser
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if net.ParseIP(host) != nil {
		return true // a page cannot make an IP literal its own origin by rebinding
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || names[host]
}

func crossSite(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v != "" && v != "none" && v != "same-origin"
}

func jsonOrNone(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
