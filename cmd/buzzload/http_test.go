package main

import (
	"compress/gzip"
	"crypto/md5" //nolint:gosec // the digest-auth endpoint speaks RFC 2617
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// testHTTPServer is the loopback server the k6/http conformance scripts
// talk to (their BASE, and TLSBASE for the TLS twin):
//
//	/status/{code}     answers that status
//	/delay/{ms}        answers 200 after ms
//	/redirect/{n}      302 to /redirect/{n-1}, /redirect/0 answers 200
//	/redirect-to?url=  302 to url (status= picks the code)
//	/echo              JSON of method, path, query, headers, body
//	/bytes/{n}         n bytes of 'x' (a big body)
//	/gzip              a gzip-encoded JSON body
//	/conns             how many TCP connections were opened so far
//	/cookies/set?k=v   sets cookies; /cookies echoes the request's cookies
//	/basic-auth/{u}/{p}, /digest-auth/{u}/{p}
//	/close             hijacks and closes the connection (no response)
//	/ws                a WebSocket echo (subprotocol echo); "close-me" makes it close with 4000
type testHTTPServer struct {
	plain, tls *httptest.Server
	conns      atomic.Int64
	refused    string // an address nothing listens on
}

func newTestHTTPServer(t *testing.T) *testHTTPServer {
	t.Helper()
	s := &testHTTPServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.PathValue("code"))
		w.WriteHeader(code)
	})
	mux.HandleFunc("/delay/{ms}", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.PathValue("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/redirect/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n <= 0 {
			fmt.Fprint(w, "landed")
			return
		}
		http.Redirect(w, r, "/redirect/"+strconv.Itoa(n-1), http.StatusFound)
	})
	mux.HandleFunc("/redirect-to", func(w http.ResponseWriter, r *http.Request) {
		code := http.StatusFound
		if c := r.URL.Query().Get("status"); c != "" {
			code, _ = strconv.Atoi(c)
		}
		http.Redirect(w, r, r.URL.Query().Get("url"), code)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for k, v := range r.Header {
			h[k] = strings.Join(v, ", ")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery,
			"headers": h, "body": string(b), "host": r.Host,
		})
	})
	mux.HandleFunc("/bytes/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		_, _ = io.Copy(w, io.LimitReader(repeatX{}, int64(n)))
	})
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		gz := gzip.NewWriter(w)
		_, _ = gz.Write([]byte(`{"gzipped":true,"items":[{"id":1},{"id":2}]}`))
		_ = gz.Close()
	})
	mux.HandleFunc("/conns", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, s.conns.Load())
	})
	mux.HandleFunc("/cookies/set", func(w http.ResponseWriter, r *http.Request) {
		for k, v := range r.URL.Query() {
			http.SetCookie(w, &http.Cookie{Name: k, Value: v[0], Path: "/"})
		}
		fmt.Fprint(w, "set")
	})
	mux.HandleFunc("/cookies", func(w http.ResponseWriter, r *http.Request) {
		m := map[string]string{}
		for _, c := range r.Cookies() {
			m[c.Name] = c.Value
		}
		_ = json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("/basic-auth/{u}/{p}", func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != r.PathValue("u") || p != r.PathValue("p") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "authorized")
	})
	mux.HandleFunc("/digest-auth/{u}/{p}", func(w http.ResponseWriter, r *http.Request) {
		const realm, nonce = "test", "abc123"
		a := r.Header.Get("Authorization")
		if !strings.HasPrefix(a, "Digest ") {
			w.Header().Set("WWW-Authenticate", `Digest realm="test", nonce="abc123", qop="auth"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		p := map[string]string{}
		for _, part := range strings.Split(a[len("Digest "):], ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			p[k] = strings.Trim(v, `"`)
		}
		h := func(s string) string { x := md5.Sum([]byte(s)); return hex.EncodeToString(x[:]) } //nolint:gosec // digest
		ha1 := h(r.PathValue("u") + ":" + realm + ":" + r.PathValue("p"))
		ha2 := h(r.Method + ":" + p["uri"])
		want := h(ha1 + ":" + nonce + ":" + p["nc"] + ":" + p["cnonce"] + ":" + p["qop"] + ":" + ha2)
		if p["response"] != want {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "digest ok")
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			return
		}
		c, _, _ := hj.Hijack()
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a clean close
		}
		_ = c.Close()
	})
	up := websocket.Upgrader{Subprotocols: []string{"echo"}}
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if string(b) == "close-me" {
				_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4000, "asked to"), time.Now().Add(time.Second))
				continue
			}
			if err := c.WriteMessage(mt, b); err != nil {
				return
			}
		}
	})
	count := func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.plain = httptest.NewUnstartedServer(mux)
	s.plain.Config.ConnState = count
	s.plain.Start()
	s.tls = httptest.NewUnstartedServer(mux)
	s.tls.Config.ConnState = count
	s.tls.EnableHTTP2 = true
	s.tls.StartTLS()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.refused = l.Addr().String()
	_ = l.Close()
	t.Cleanup(func() { s.plain.Close(); s.tls.Close() })
	return s
}

type repeatX struct{}

func (repeatX) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'x'
	}
	return len(b), nil
}

// TestHTTPConformance runs testdata/http/*.js against a fresh loopback
// server each (so connection counts are the script's own), with BASE,
// TLSBASE and REFUSED in the script's environment.
func TestHTTPConformance(t *testing.T) {
	dir, err := filepath.Abs("testdata/http")
	if err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob(filepath.Join(dir, "*.js"))
	if len(scripts) == 0 {
		t.Fatal("no k6/http conformance scripts")
	}
	for _, script := range scripts {
		t.Run(strings.TrimSuffix(filepath.Base(script), ".js"), func(t *testing.T) {
			t.Parallel()
			srv := newTestHTTPServer(t)
			runCase(t, dir, script, []string{
				"-e", "BASE=" + srv.plain.URL, "-e", "TLSBASE=" + srv.tls.URL, "-e", "REFUSED=" + srv.refused,
			})
		})
	}
}

// The expected_response sub-metric k6 adds by itself is in the summary data
// only once a sample carried expected_response=true: with a null response
// callback (no such tag) k6 v2.2.0's data has none; with the default one it
// has it (observed on k6 v2.2.0 against a loopback server).
func TestExpectedResponseSubmetricOnlyOnceObserved(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		callback string
		want     bool
	}{{"http.setResponseCallback(null);", false}, {"", true}} {
		src := `import http from 'k6/http';
` + tc.callback + `
export const options = { iterations: 2 };
export default function () { http.get(__ENV.TARGET); }
export function handleSummary(d) { return { stdout: JSON.stringify(Object.keys(d.metrics)) }; }
`
		script := filepath.Join(dir, writeFile(t, dir, fmt.Sprintf("rc%v.js", tc.want), src))
		code, out, errs := runCLI(t, "run", "-q", "-e", "TARGET="+srv.URL, script)
		if code != 0 {
			t.Fatalf("exit %d %s", code, errs)
		}
		if got := strings.Contains(out, `"http_req_duration{expected_response:true}"`); got != tc.want {
			t.Errorf("callback %q: sub-metric in the data = %v, want %v: %s", tc.callback, got, tc.want, out)
		}
	}
}
