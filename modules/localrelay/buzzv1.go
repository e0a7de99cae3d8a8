package localrelay

import "net/http"

// buzzV1Eligible are the kinds /buzz/v1 counts (digest §3.10).
var buzzV1Eligible = map[int]bool{9: true, 40002: true, 45001: true, 45003: true}

// serveBuzzV1 serves /buzz/v1 when enabled.
func (r *Relay) serveBuzzV1(w http.ResponseWriter, req *http.Request, c *community) {
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"code": "not_found", "request_id": newUUID()}})
}
