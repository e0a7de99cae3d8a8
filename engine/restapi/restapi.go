// Package restapi serves k6's REST API over a run (docs/k6-operator.md;
// the k6 REST API reference): JSON:API documents at k6's paths and with its
// status codes, so grafana/k6-operator's starter, stopper and probes (and
// `curl`) drive buzzload as they drive k6.
//
//	GET/PATCH /v1/status    status, resume of a --paused run, stop (exit 103)
//	GET /v1/metrics[/<id>]  every metric's current values
//	GET /v1/groups[/<id>]   the groups that ran (id: hex MD5 of the path)
//	GET/POST/PUT /v1/setup  setup data; POST runs setup(), PUT replaces it
//	POST /v1/teardown       runs teardown(data)
package restapi

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/metrics"
)

// Run is what the API reads and steers; *engine.Control implements it.
type Run interface {
	Status() engine.StatusInfo
	SetPaused(paused bool) error
	Stop()
	Metrics() (*metrics.Snapshot, map[string]bool)
	SetupData() json.RawMessage
	SetSetupData(raw json.RawMessage) error
	RunSetup(ctx context.Context) (json.RawMessage, error)
	RunTeardown(ctx context.Context) error
}

// maxBody bounds a request body: setup data is the largest, and a PATCH
// is a few hundred bytes.
const maxBody = 16 << 20

// Handler routes k6's REST API paths to run.
func Handler(run Run) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/status", methods(map[string]http.HandlerFunc{
		http.MethodGet:   func(w http.ResponseWriter, _ *http.Request) { writeDoc(w, http.StatusOK, statusDoc(run.Status())) },
		http.MethodPatch: func(w http.ResponseWriter, r *http.Request) { patchStatus(run, w, r) },
	}))
	mux.HandleFunc("/v1/metrics", methods(map[string]http.HandlerFunc{
		http.MethodGet: func(w http.ResponseWriter, _ *http.Request) { getMetrics(run, w, "") },
	}))
	mux.HandleFunc("/v1/metrics/", methods(map[string]http.HandlerFunc{
		http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
			getMetrics(run, w, strings.TrimPrefix(r.URL.Path, "/v1/metrics/"))
		},
	}))
	mux.HandleFunc("/v1/groups", methods(map[string]http.HandlerFunc{
		http.MethodGet: func(w http.ResponseWriter, _ *http.Request) { getGroups(run, w, "", false) },
	}))
	mux.HandleFunc("/v1/groups/", methods(map[string]http.HandlerFunc{
		http.MethodGet: func(w http.ResponseWriter, r *http.Request) {
			getGroups(run, w, strings.TrimPrefix(r.URL.Path, "/v1/groups/"), true)
		},
	}))
	mux.HandleFunc("/v1/setup", methods(map[string]http.HandlerFunc{
		http.MethodGet:  func(w http.ResponseWriter, _ *http.Request) { writeDoc(w, http.StatusOK, setupDoc(run.SetupData())) },
		http.MethodPost: func(w http.ResponseWriter, r *http.Request) { postSetup(run, w, r) },
		http.MethodPut:  func(w http.ResponseWriter, r *http.Request) { putSetup(run, w, r) },
	}))
	mux.HandleFunc("/v1/teardown", methods(map[string]http.HandlerFunc{
		http.MethodPost: func(w http.ResponseWriter, r *http.Request) {
			if err := run.RunTeardown(r.Context()); err != nil {
				writeError(w, http.StatusInternalServerError, "Error executing teardown", err.Error())
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
		},
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found", "no endpoint "+r.URL.Path)
	})
	return mux
}

// methods answers 405 to a method the path does not take.
func methods(byMethod map[string]http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h, ok := byMethod[r.Method]
		if !ok {
			w.Header().Set("Allow", strings.Join(slices.Sorted(maps.Keys(byMethod)), ", "))
			writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed", r.Method+" is not allowed on "+r.URL.Path)
			return
		}
		h(w, r)
	}
}

// errorDoc is a JSON:API error document, as k6 writes them.
type errorDoc struct {
	Errors []apiError `json:"errors"`
}

type apiError struct {
	Status string `json:"status,omitempty"`
	Title  string `json:"title,omitempty"`
	Detail string `json:"detail,omitempty"`
}

func writeError(w http.ResponseWriter, code int, title, detail string) {
	writeDoc(w, code, errorDoc{Errors: []apiError{{Status: strconv.Itoa(code), Title: title, Detail: detail}}})
}

func writeDoc(w http.ResponseWriter, code int, doc any) {
	b, err := json.Marshal(doc)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"errors":[{"status":"500","title":"Encoding error"}]}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// readBody reads a bounded request body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "Couldn't read request", err.Error())
		return nil, false
	}
	return b, true
}

// --- status ---------------------------------------------------------------

type statusAttributes struct {
	Status  int   `json:"status"`
	Paused  bool  `json:"paused"`
	VUs     int64 `json:"vus"`
	VUsMax  int64 `json:"vus-max"`
	Stopped bool  `json:"stopped"`
	Running bool  `json:"running"`
	Tainted bool  `json:"tainted"`
}

type resource[A any] struct {
	Type       string `json:"type"`
	ID         string `json:"id"`
	Attributes A      `json:"attributes"`
}

type document[D any] struct {
	Data D `json:"data"`
}

func statusDoc(s engine.StatusInfo) document[resource[statusAttributes]] {
	return document[resource[statusAttributes]]{Data: resource[statusAttributes]{Type: "status", ID: "default", Attributes: statusAttributes{
		Status: int(s.Status), Paused: s.Paused, VUs: s.VUs, VUsMax: s.VUsMax,
		Stopped: s.Stopped, Running: s.Running, Tainted: s.Tainted,
	}}}
}

// statusPatch is a PATCH body's attributes; absent ones are nil.
type statusPatch struct {
	Data struct {
		Attributes struct {
			Paused  *bool            `json:"paused"`
			Stopped *bool            `json:"stopped"`
			VUs     *json.RawMessage `json:"vus"`
			VUsMax  *json.RawMessage `json:"vus-max"`
		} `json:"attributes"`
	} `json:"data"`
}

// patchStatus stops the run when asked, else resumes it; VU changes are
// refused as k6 v2.2 refuses them (k6's order: a stop wins over the other
// attributes, a pause error over the VU one).
func patchStatus(run Run, w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var p statusPatch
	if err := json.Unmarshal(body, &p); err != nil {
		writeError(w, http.StatusBadRequest, "Invalid data", err.Error())
		return
	}
	a := p.Data.Attributes
	if a.Stopped != nil && *a.Stopped {
		run.Stop()
	} else {
		if a.Paused != nil {
			if err := run.SetPaused(*a.Paused); err != nil {
				writeError(w, http.StatusInternalServerError, "Pause error", err.Error())
				return
			}
		}
		if a.VUs != nil || a.VUsMax != nil {
			// k6 v2.2 (api/v1/status_routes.go): no executor takes live
			// VU changes since externally-controlled was removed.
			writeError(w, http.StatusInternalServerError, "Execution config error", "live VU configuration updates are not supported")
			return
		}
	}
	writeDoc(w, http.StatusOK, statusDoc(run.Status()))
}

// --- setup ----------------------------------------------------------------

// setupAttributes are k6's: no "data" when setup returned nothing (or
// none was set), "data": null when it returned null (observed on k6 v1.8.1:
// `{"data":{"type":"setupData","id":"default","attributes":{}}}`).
type setupAttributes struct {
	Data json.RawMessage `json:"data,omitempty"`
}

func setupDoc(data json.RawMessage) document[resource[setupAttributes]] {
	return document[resource[setupAttributes]]{Data: resource[setupAttributes]{Type: "setupData", ID: "default", Attributes: setupAttributes{Data: data}}}
}

func postSetup(run Run, w http.ResponseWriter, r *http.Request) {
	data, err := run.RunSetup(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Error executing setup", err.Error())
		return
	}
	writeDoc(w, http.StatusOK, setupDoc(data))
}

// putSetup replaces the setup data with the body (JSON; empty clears it).
func putSetup(run Run, w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var raw json.RawMessage
	if len(strings.TrimSpace(string(body))) > 0 {
		if !json.Valid(body) {
			writeError(w, http.StatusBadRequest, "Error parsing request body", "the body is not JSON")
			return
		}
		raw = body
	}
	if err := run.SetSetupData(raw); err != nil {
		writeError(w, http.StatusInternalServerError, "Error setting setup data", err.Error())
		return
	}
	writeDoc(w, http.StatusOK, setupDoc(run.SetupData()))
}
