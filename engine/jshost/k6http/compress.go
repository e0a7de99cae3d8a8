package k6http

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// compressBody applies params.compression's algorithms in order (k6 stacks
// them: "gzip, br" gzips first, then brotli).
func compressBody(b []byte, algs []string) ([]byte, error) {
	for _, alg := range algs {
		var buf bytes.Buffer
		var w io.WriteCloser
		switch alg {
		case "gzip":
			w = gzip.NewWriter(&buf)
		case "deflate":
			w = zlib.NewWriter(&buf)
		case "br":
			w = brotli.NewWriter(&buf)
		case "zstd":
			zw, err := zstd.NewWriter(&buf)
			if err != nil {
				return nil, err
			}
			w = zw
		default:
			return nil, fmt.Errorf("unknown compression %q", alg)
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		b = buf.Bytes()
	}
	return b, nil
}

// decodeBody undoes a response's Content-Encoding (k6 decodes gzip,
// deflate, br and zstd bodies for the script), last encoding first.
func decodeBody(b []byte, encoding string) ([]byte, error) {
	if encoding == "" || len(b) == 0 {
		return b, nil
	}
	encs := strings.Split(encoding, ",")
	for i := len(encs) - 1; i >= 0; i-- {
		var r io.Reader
		var err error
		switch strings.ToLower(strings.TrimSpace(encs[i])) {
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(bytes.NewReader(b))
		case "deflate":
			r, err = zlib.NewReader(bytes.NewReader(b))
		case "br":
			r = brotli.NewReader(bytes.NewReader(b))
		case "zstd":
			var d *zstd.Decoder
			d, err = zstd.NewReader(bytes.NewReader(b))
			if err == nil {
				defer d.Close()
				r = d
			}
		case "identity", "":
			continue
		default:
			return b, nil // unknown encodings are left as they are
		}
		if err != nil {
			return nil, errDecompress{err}
		}
		out, err := io.ReadAll(r)
		if err != nil {
			return nil, errDecompress{err}
		}
		b = out
	}
	return b, nil
}
