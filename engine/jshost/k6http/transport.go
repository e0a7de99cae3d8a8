package k6http

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/localaddr"
)

// newTransport builds one VU's transport: k6 gives every VU its own
// connection pool (docs/k6-compat.md §1.4), so keep-alive connections are reused
// within a VU and never across VUs. Bytes are counted on the raw
// connections, TLS records included, as k6's dialer does for data_sent and
// data_received. With localIPs, VU vu dials from its one address
// (localaddr.List.ForVU: k6's rule).
func newTransport(s settings, vu uint64, count func(sent, recv int64)) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	localaddr.Bind(d, s.localIPs.ForVU(vu))
	tlsCfg := &tls.Config{
		InsecureSkipVerify: s.insecure, //nolint:gosec // the insecureSkipTLSVerify option asks for it
		MinVersion:         s.tls.Min,
		MaxVersion:         s.tls.Max,
	}
	if tlsCfg.MinVersion == 0 {
		tlsCfg.MinVersion = tls.VersionTLS10 // k6 allows TLS 1.0 unless tlsVersion says otherwise
	}
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			addr = mapHost(s.hosts, addr)
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return CountingConn(c, count), nil
		},
		TLSClientConfig:       tlsCfg,
		ForceAttemptHTTP2:     true,
		DisableKeepAlives:     s.noReuse,
		DisableCompression:    true, // bodies are decoded by Content-Encoding, as k6 does
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   s.batchPerHost + 1,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   0,
		ExpectContinueTimeout: time.Second,
	}
	return t
}

// mapHost applies the hosts option to a dial address "host:port". Keys may
// be "host", "host:port" or "*.domain"; values "ip", "ip:port" or a name.
func mapHost(hosts map[string]string, addr string) string {
	if len(hosts) == 0 {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	to, ok := hosts[addr]
	if !ok {
		to, ok = hosts[host]
	}
	if !ok {
		for k, v := range hosts {
			if strings.HasPrefix(k, "*.") && strings.HasSuffix(host, k[1:]) {
				to, ok = v, true
				break
			}
		}
	}
	if !ok {
		return addr
	}
	h, p, _ := splitHostPortOpt(to)
	if p != 0 {
		return net.JoinHostPort(h, strconv.Itoa(p))
	}
	return net.JoinHostPort(h, port)
}

// CountingConn wraps c so that it reports the bytes it moves to count
// (data_sent, data_received); k6/experimental/websockets counts its
// connections with it too.
func CountingConn(c net.Conn, count func(sent, recv int64)) net.Conn {
	return &countingConn{Conn: c, count: count}
}

type countingConn struct {
	net.Conn
	count func(sent, recv int64)
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.count(0, int64(n))
	}
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.count(int64(n), 0)
	}
	return n, err
}
