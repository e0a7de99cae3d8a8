package k6http

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"

	"github.com/buzzload/buzzload/engine/jshost/vudialer"
)

// k6's error codes (k6 docs, "Error codes").
const (
	codeGeneric         = 1000
	codeInvalidURL      = 1020
	codeTimeout         = 1050
	codeDNS             = 1100
	codeNoIP            = 1101
	codeBlacklistedIP   = 1110
	codeBlockedHostname = 1111
	codeTCP             = 1200
	codeBrokenPipe      = 1201
	codeTCPUnknown      = 1202
	codeDial            = 1210
	codeDialTimeout     = 1211
	codeDialRefused     = 1212
	codeDialUnknown     = 1213
	codeReset           = 1220
	codeTLS             = 1300
	codeUnknownCA       = 1310
	codeHostMismatch    = 1311
	codeHTTP2           = 1600
	codeDecompression   = 1701
	codeHTTPStatusFirst = 1000 // + status for 4xx and 5xx
)

// reqError is a request failure: k6's code and its message.
type reqError struct {
	code int
	msg  string
	// cause is Response.error: k6 gives the bare cause (`EOF`, not
	// `Get "http://…": EOF`; observed on v1.8.1); msg, the whole, goes to
	// the "Request Failed" log and to a thrown error. "" means msg.
	cause string
}

func (e *reqError) Error() string { return e.msg }

// text is the response's error field.
func (e *reqError) text() string {
	if e.cause != "" {
		return e.cause
	}
	return e.msg
}

// errTimeout is what a request past its timeout reports, as k6 does.
var errTimeout = errors.New("request timeout")

// errDecompress marks a body that could not be decoded.
type errDecompress struct{ err error }

func (e errDecompress) Error() string { return e.err.Error() }
func (e errDecompress) Unwrap() error { return e.err }

// classify maps a transport error to k6's code and message. The message
// keeps the operation (`Get "http://…": dial tcp …: connect: connection
// refused`) so logs say what failed.
func classify(err error, timedOut bool) *reqError {
	if err == nil {
		return nil
	}
	re := classifyWhole(err, timedOut)
	if m := k6Message(re.code, err); m != "" && re.cause == "" {
		c := *re
		c.cause = m
		return &c
	}
	var uErr *url.Error
	if re.cause == "" && re.code != codeTimeout && errors.As(err, &uErr) && uErr.Err != nil {
		c := *re
		c.cause = uErr.Err.Error()
		return &c
	}
	return re
}

// k6Message is k6's own message for the codes it names one for (the
// response's error and the error tag; lib/netext/httpext/error_codes.go,
// read in v2.2.0 and observed: "dial: connection refused", "lookup: no
// such host"), "" for the others.
func k6Message(code int, err error) string {
	op := "read"
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		op = opErr.Op
	}
	switch code {
	case codeDialRefused:
		return "dial: connection refused"
	case codeDialTimeout:
		return "dial: i/o timeout"
	case codeReset:
		return op + ": connection reset by peer"
	case codeBrokenPipe:
		return op + ": broken pipe"
	case codeNoIP:
		return "lookup: no such host"
	case codeBlacklistedIP:
		return "ip is blacklisted"
	case codeBlockedHostname:
		return "hostname is blocked"
	case codeUnknownCA:
		return "x509: unknown authority"
	case codeHostMismatch:
		return "x509: certificate doesn't match hostname"
	}
	return ""
}

func classifyWhole(err error, timedOut bool) *reqError {
	var re *reqError
	if errors.As(err, &re) {
		return re
	}
	if timedOut || errors.Is(err, errTimeout) {
		return &reqError{code: codeTimeout, msg: "request timeout"}
	}
	msg := err.Error()
	var de errDecompress
	if errors.As(err, &de) {
		return &reqError{code: codeDecompression, msg: msg}
	}
	var blIP *vudialer.BlacklistedIPError
	if errors.As(err, &blIP) {
		return &reqError{code: codeBlacklistedIP, msg: msg}
	}
	var blHost *vudialer.BlockedHostError
	if errors.As(err, &blHost) {
		return &reqError{code: codeBlockedHostname, msg: msg}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return &reqError{code: codeNoIP, msg: msg}
		}
		return &reqError{code: codeDNS, msg: msg}
	}
	var uaErr x509.UnknownAuthorityError
	if errors.As(err, &uaErr) {
		return &reqError{code: codeUnknownCA, msg: msg}
	}
	var hnErr x509.HostnameError
	if errors.As(err, &hnErr) {
		return &reqError{code: codeHostMismatch, msg: msg}
	}
	var vErr *tls.CertificateVerificationError
	if errors.As(err, &vErr) {
		return &reqError{code: codeTLS, msg: msg}
	}
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	if errors.As(err, &recErr) || errors.As(err, &alert) || strings.Contains(msg, "tls: ") {
		return &reqError{code: codeTLS, msg: msg}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		if opErr.Op == "dial" {
			switch {
			case opErr.Timeout():
				return &reqError{code: codeDialTimeout, msg: msg}
			case errors.Is(err, syscall.ECONNREFUSED):
				return &reqError{code: codeDialRefused, msg: msg}
			}
			var se *os.SyscallError
			if errors.As(err, &se) {
				return &reqError{code: codeDialUnknown, msg: msg}
			}
			return &reqError{code: codeDial, msg: msg}
		}
		switch {
		case errors.Is(err, syscall.ECONNRESET):
			return &reqError{code: codeReset, msg: msg}
		case errors.Is(err, syscall.EPIPE):
			return &reqError{code: codeBrokenPipe, msg: msg}
		}
		var se *os.SyscallError
		if errors.As(err, &se) {
			return &reqError{code: codeTCPUnknown, msg: msg}
		}
		return &reqError{code: codeTCP, msg: msg}
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return &reqError{code: codeReset, msg: msg}
	case errors.Is(err, syscall.EPIPE):
		return &reqError{code: codeBrokenPipe, msg: msg}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &reqError{code: codeDialRefused, msg: msg}
	case errors.Is(err, context.DeadlineExceeded):
		return &reqError{code: codeTimeout, msg: "request timeout"}
	}
	var uErr *url.Error
	if errors.As(err, &uErr) && strings.Contains(msg, "unsupported protocol scheme") {
		// k6: 1000, not 1020; the response's error and the error tag are
		// the bare cause (v2.2.0, observed: `unsupported protocol scheme ""`).
		return &reqError{code: codeGeneric, msg: msg, cause: uErr.Err.Error()}
	}
	if strings.Contains(msg, "http2: ") {
		return &reqError{code: codeHTTP2, msg: msg}
	}
	if strings.Contains(msg, "connection reset") {
		return &reqError{code: codeReset, msg: msg}
	}
	return &reqError{code: codeGeneric, msg: msg}
}

func invalidURL(err error) *reqError {
	// k6 v2.2.0's text (observed): `invalid URL: parse "<url>": <why>`.
	return &reqError{code: codeInvalidURL, msg: fmt.Sprintf("invalid URL: %v", err)}
}
