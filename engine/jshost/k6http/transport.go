package k6http

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
)

// newTransport builds one VU's transport: k6 gives every VU its own
// connection pool (docs/k6-compat.md §1.4), so keep-alive connections are reused
// within a VU and never across VUs. Bytes are counted on the raw
// connections, TLS records included, as k6's dialer does for data_sent and
// data_received. Dials go through the VU's dialer (Options.Dialer: hosts,
// blockHostnames, blacklistIPs, localIPs), as k6's do.
func newTransport(s settings, vu uint64, resolvers *dnsresolve.Shared, count func(sent, recv int64)) *http.Transport {
	d := s.dial.Dialer(vu, resolvers, count)
	tlsCfg := &tls.Config{
		InsecureSkipVerify: s.insecure, //nolint:gosec // the insecureSkipTLSVerify option asks for it
		MinVersion:         s.tls.Min,
		MaxVersion:         s.tls.Max,
	}
	if tlsCfg.MinVersion == 0 {
		tlsCfg.MinVersion = tls.VersionTLS10 // k6 allows TLS 1.0 unless tlsVersion says otherwise
	}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
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
