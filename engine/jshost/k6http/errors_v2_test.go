package k6http

import (
	"net"
	"net/http"
	"testing"
)

// The response's error and the error tag carry k6's own message where k6
// names one, the bare cause otherwise (k6 v2.2.0, observed: a refused
// dial is "dial: connection refused", a URL with no scheme `unsupported
// protocol scheme ""`), while the log keeps the whole text. Fails with the
// whole text ("Get \"http://…\": dial tcp …: connect: connection refused").
func TestErrorTextsAsK6(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, c := range []struct {
		url, want string
		code      int
	}{
		{"http://" + addr + "/", "dial: connection refused", codeDialRefused},
		{"not%20a%20url", `unsupported protocol scheme ""`, codeGeneric},
	} {
		_, err := http.Get(c.url)
		re := classify(err, false)
		if re.code != c.code || re.text() != c.want || re.msg == c.want {
			t.Errorf("%s: code %d, text %q, log %q; want %d, %q", c.url, re.code, re.text(), re.msg, c.code, c.want)
		}
	}
}
