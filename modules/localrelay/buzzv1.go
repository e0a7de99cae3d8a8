package localrelay

import "net/http"

// serveBuzzV1 serves /buzz/v1 when enabled.
func (r *Relay) serveBuzzV1(w http.ResponseWriter, req *http.Request, c *community) {
	w.Header().Set("Cache-Control", "private, no-store")
	writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]string{"code": "not_found", "request_id": newUUID()}})
}
