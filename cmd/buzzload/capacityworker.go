package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/termtext"
)

// A capacity search across machines (issue 44): each machine runs a
// `buzzload capacity-worker`, and `buzzload capacity --runners URL,…`
// sends every probe's shards to them through the worker's one endpoint,
// POST /v1/buzz/probe, then merges their result files as it merges local
// shards. On Kubernetes the workers are the pods of a Deployment (one
// per node), docs/guide.md "Capacity".

const workerUsage = `usage: buzzload capacity-worker [--address HOST:PORT]

Serves one endpoint for a capacity search run across machines
('buzzload capacity --runners URL,…'): POST /v1/buzz/probe runs one shard of a
probe (an execution segment of its scenario, started at a given time) as a
'buzzload run' of its own and answers with its result file. One probe at a
time (409 while busy). Every request must carry
'Authorization: Bearer <token>' with the token in $BUZZLOAD_WORKER_TOKEN
(required, never printed). Prints 'buzzload capacity-worker listening on ADDR'
first, runs until SIGINT or SIGTERM.

flags:
`

// WorkerTokenEnv names the worker's shared secret.
const WorkerTokenEnv = "BUZZLOAD_WORKER_TOKEN"

// probeRequest is one shard of one probe.
type probeRequest struct {
	TOML     string `json:"toml"`     // the probe's scenario file
	Segment  string `json:"segment"`  // --execution-segment
	Sequence string `json:"sequence"` // --execution-segment-sequence
	StartAt  string `json:"start_at"` // --start-at (RFC 3339)
	// OperatorKey is the search's own relay's key, for a scenario that
	// names no relay (the probe's operator_key_env); empty otherwise.
	OperatorKey string `json:"operator_key,omitempty"`
}

func capacityWorkerCmd(ctx context.Context, args []string, env cliEnv) int {
	const name = "buzzload capacity-worker"
	fs := pflag.NewFlagSet("capacity-worker", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("address", "127.0.0.1:6570", "where the endpoint listens")
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(env.Stdout, workerUsage+fs.FlagUsages())
		return 0
	}
	if err != nil || fs.NArg() != 0 {
		fmt.Fprintf(env.Stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, name)
		return 2
	}
	token, _ := envLookup(env.Env)(WorkerTokenEnv)
	if len(token) < 16 {
		fmt.Fprintf(env.Stderr, "%s: $%s must hold a token of at least 16 characters (shared with buzzload capacity)\n", name, WorkerTokenEnv)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 1
	}
	w := &worker{self: self, token: token, env: env.Env}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/buzz/probe", w.probe)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stdout, "buzzload capacity-worker listening on %s\n", ln.Addr())
	ctx, stop := signalContext(ctx, name, env)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(env.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

type worker struct {
	self  string
	token string
	env   []string
	busy  sync.Mutex
}

func (w *worker) probe(rw http.ResponseWriter, req *http.Request) {
	got := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(got), []byte(w.token)) != 1 {
		workerError(rw, http.StatusUnauthorized, "a bearer token is required")
		return
	}
	if !w.busy.TryLock() {
		workerError(rw, http.StatusConflict, "a probe is running")
		return
	}
	defer w.busy.Unlock()
	var p probeRequest
	if err := json.NewDecoder(io.LimitReader(req.Body, 4<<20)).Decode(&p); err != nil || p.TOML == "" || p.Segment == "" || p.Sequence == "" {
		workerError(rw, http.StatusBadRequest, "want a JSON body {toml, segment, sequence, start_at}")
		return
	}
	dir, err := os.MkdirTemp("", "buzzload-worker-")
	if err != nil {
		workerError(rw, http.StatusInternalServerError, err.Error())
		return
	}
	defer os.RemoveAll(dir)
	toml, result := filepath.Join(dir, "probe.toml"), filepath.Join(dir, "result.json")
	if err := os.WriteFile(toml, []byte(p.TOML), 0o600); err != nil {
		workerError(rw, http.StatusInternalServerError, err.Error())
		return
	}
	args := []string{"run", "-q", "--address", "", "--report-interval", "0s", "--execution-segment", p.Segment,
		"--execution-segment-sequence", p.Sequence, "--result", result}
	if p.StartAt != "" {
		args = append(args, "--start-at", p.StartAt)
	}
	env := append([]string(nil), w.env...)
	if p.OperatorKey != "" {
		env = append(env, capacityKeyEnv+"="+p.OperatorKey)
	}
	runErr := runLogged(req.Context(), w.self, env, filepath.Join(dir, "run.log"), nil, append(args, toml)...)
	body, err := os.ReadFile(result)
	if err != nil {
		why := "the probe's run wrote no result"
		if runErr != nil {
			why += " (" + runErr.Error() + ": " + lastLine(filepath.Join(dir, "run.log")) + ")"
		}
		workerError(rw, http.StatusInternalServerError, termtext.Clean(why))
		return
	}
	code := 0
	var ee interface{ ExitCode() int }
	if errors.As(runErr, &ee) {
		code = ee.ExitCode()
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("X-Buzzload-Exit", strconv.Itoa(code))
	_, _ = rw.Write(body)
}

func workerError(rw http.ResponseWriter, status int, msg string) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(map[string]string{"error": msg})
}

// remoteShard sends one shard of a probe to a worker and writes its
// result file to path.
func remoteShard(ctx context.Context, url, token, path string, p probeRequest) error {
	body, _ := json.Marshal(p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(url, "/")+"/v1/buzz/probe", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.Unmarshal(b, &e)
		return fmt.Errorf("worker %s: %s: %s", url, resp.Status, e.Error)
	}
	return os.WriteFile(path, b, 0o600)
}
