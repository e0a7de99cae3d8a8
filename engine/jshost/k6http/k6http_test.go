package k6http

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buzzload/buzzload/engine/jshost/vudialer"
)

func TestParseOptions(t *testing.T) {
	o, err := ParseOptions([]byte(`{"batch": 3, "batchPerHost": 2, "maxRedirects": 0, "userAgent": "", "tlsVersion": {"min": "tls1.2", "max": "tls1.3"},
		"hosts": {"a.test": "127.0.0.1:8080", "*.b.test": "127.0.0.2"}, "discardResponseBodies": true, "vus": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	s := o.settings("default-ua")
	if s.batch != 3 || s.batchPerHost != 2 || s.maxRedirects != 0 || s.userAgent != "" || !s.discard ||
		s.tls.Min != tls.VersionTLS12 || s.tls.Max != tls.VersionTLS13 {
		t.Errorf("settings %+v", s)
	}
	if o.LocalAddr(1).IsValid() {
		t.Error("no localIPs: want the kernel's choice")
	}
	l, err := ParseOptions([]byte(`{"localIPs": "10.0.0.1-10.0.0.2"}`))
	if err != nil || l.LocalAddr(0).String() != "10.0.0.1" || l.LocalAddr(2).String() != "10.0.0.2" || l.LocalAddr(3).String() != "10.0.0.1" {
		t.Errorf("localIPs: VU 0, 2, 3 dial from %v %v %v (%v); want 10.0.0.1, .2, .1", l.LocalAddr(0), l.LocalAddr(2), l.LocalAddr(3), err)
	}
	if _, err := ParseOptions([]byte(`{"localIPs": "10.0.0.1,nope"}`)); err == nil || !strings.Contains(err.Error(), `localIPs: "nope"`) {
		t.Errorf("bad localIPs: %v; want it named with the bad entry", err)
	}
	d := Options{}.settings("ua")
	if d.batch != 20 || d.batchPerHost != 6 || d.maxRedirects != 10 || d.userAgent != "ua" {
		t.Errorf("defaults %+v", d)
	}
	for _, bad := range []string{`{"batch": "x"}`, `{"batch": -1}`, `{"tlsVersion": "tls9"}`,
		`{"tlsVersion": {"min": "tls1.3", "max": "tls1.2"}}`, `{"hosts": {"a": ":99999"}}`, `{"insecureSkipTLSVerify": 1}`,
		`{"hosts": {"a.test": "0[0"}}`, `{"hosts": {"a.test": "two words"}}`, `{"hosts": {"a.test": "x..y"}}`, `{"hosts": {"a.test": ""}}`,
		`{"localIPs": "10.0.0.1,nope"}`, `{"localIPs": 5}`, `{"blacklistIPs": ["10.0.0.1"]}`,
		`{"blockHostnames": ["a.*.test"]}`, `{"blockHostnames": "x.test"}`} {
		if _, err := ParseOptions([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Get", URL: "http://x/", Err: err} }
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	cases := []struct {
		err  error
		code int
	}{
		{wrap(dial(syscall.ECONNREFUSED)), codeDialRefused},
		{wrap(dial(timeoutErr{})), codeDialTimeout},
		{wrap(&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), codeReset},
		{wrap(&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}), codeBrokenPipe},
		{wrap(&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}), codeNoIP},
		{wrap(&net.DNSError{Err: "server misbehaving", Name: "x"}), codeDNS},
		{wrap(errDecompress{errors.New("gzip: invalid header")}), codeDecompression},
		{wrap(context.DeadlineExceeded), codeTimeout},
		{wrap(dial(&vudialer.BlacklistedIPError{})), codeBlacklistedIP},
		{wrap(&vudialer.BlockedHostError{}), codeBlockedHostname},
		{errors.New("something else"), codeGeneric},
	}
	for _, c := range cases {
		if got := classify(c.err, false); got.code != c.code {
			t.Errorf("%v: code %d, want %d", c.err, got.code, c.code)
		}
	}
	if got := classify(errors.New("x"), true); got.code != codeTimeout || got.msg != "request timeout" {
		t.Errorf("timed out: %+v", got)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// The timing phases add up: duration is sending + waiting + receiving, and
// a reused connection has no connecting or TLS time. A new connection's
// blocked runs until it is handed over, its DNS lookup, connect and TLS
// included, as k6 v1.8.1 measures it (blocked is never below connecting).
func TestTimings(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := &tracer{getConn: at(0), dnsStart: at(0), dnsDone: at(1), connStart: at(2), connDone: at(5), tlsStart: at(5), tlsDone: at(9),
		gotConn: at(9), wrote: at(10), firstByte: at(30)}
	tm := tr.timings(at(0), at(35))
	if tm.Blocked != 9 || tm.LookingUp != 1 || tm.Connecting != 3 || tm.TLSHandshaking != 4 || tm.Sending != 1 || tm.Waiting != 20 || tm.Receiving != 5 || tm.Duration != 26 {
		t.Errorf("new connection: %+v", tm)
	}
	re := &tracer{getConn: at(0), gotConn: at(1), reused: true, wrote: at(2), firstByte: at(4)}
	tm = re.timings(at(0), at(5))
	if tm.Blocked != 1 || tm.Connecting != 0 || tm.TLSHandshaking != 0 || tm.Duration != 4 {
		t.Errorf("reused: %+v", tm)
	}
}

func TestCompressionRoundTrip(t *testing.T) {
	in := []byte(strings.Repeat("buzz ", 100))
	for _, algs := range [][]string{{"gzip"}, {"deflate"}, {"br"}, {"zstd"}, {"gzip", "br"}} {
		c, err := compressBody(in, algs)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeBody(c, strings.Join(algs, ", "))
		if err != nil || string(out) != string(in) {
			t.Errorf("%v: %v %q", algs, err, out)
		}
	}
	if _, err := decodeBody([]byte("not gzip"), "gzip"); err == nil {
		t.Error("a broken gzip body decoded")
	}
}

func TestDigestAuthorization(t *testing.T) {
	u, _ := url.Parse("http://user:pw@h/p?q=1")
	h, err := digestAuthorization(`Digest realm="r", nonce="n", qop="auth", opaque="o"`, "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`username="user"`, `realm="r"`, `nonce="n"`, `uri="/p?q=1"`, "qop=auth", `opaque="o"`} {
		if !strings.Contains(h, want) {
			t.Errorf("%s lacks %s", h, want)
		}
	}
	if _, err := digestAuthorization(`Basic realm="r"`, "GET", u, nil); err == nil {
		t.Error("a basic challenge answered as digest")
	}
}
