package k6crypto

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule/jsmoduletest"
)

// The digests k6/crypto gives, against published vectors (RFC 1320 for
// MD4, RFC 4231 for HMAC-SHA256) and the values k6's docs print for
// "hello world!" (javascript-api/k6-crypto), checked with Python's
// hashlib; outputs in k6's encodings.
func TestDigestsMatchPublishedVectors(t *testing.T) {
	rt := jsmoduletest.Runtime(t, Module, "crypto")
	for src, want := range map[string]string{
		`crypto.md4("abc", "hex")`:                                             "a448017aaf21d8525fc10ae87aa6729d",
		`crypto.md5("hello world!", "hex")`:                                    "fc3ff98e8c6a0d3087d515c0473f8677",
		`crypto.sha1("hello world!", "hex")`:                                   "430ce34d020724ed75a196dfc2ad67c77772d169",
		`crypto.sha256("hello world!", "hex")`:                                 "7509e5bda0c762d2bac7f90d758b5b2263fa01ccbc542ab5e3df163be08e6ca9",
		`crypto.sha512_256("hello world!", "hex")`:                             "595b5926068b4828fb1c27db21281e31118b8475cb6c3ceeb09be7b685414d5f",
		`crypto.ripemd160("hello world!", "hex")`:                              "dffd03137b3a333d5754813399a5f437acd694e5",
		`crypto.sha256("hello world!", "base64")`:                              "dQnlvaDHYtK6x/kNdYtbImP6Acy8VCq1498WO+CObKk=",
		`crypto.sha256("hello world!", "base64rawurl")`:                        "dQnlvaDHYtK6x_kNdYtbImP6Acy8VCq1498WO-CObKk",
		`crypto.hmac("sha256", "Jefe", "what do ya want for nothing?", "hex")`: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
		// createHash and createHMAC: update in parts, digest once.
		`(() => { const h = crypto.createHash("sha256"); h.update("hello "); h.update("world!"); return h.digest("hex"); })()`:                         "7509e5bda0c762d2bac7f90d758b5b2263fa01ccbc542ab5e3df163be08e6ca9",
		`(() => { const h = crypto.createHMAC("sha256", "Jefe"); h.update("what do ya want "); h.update("for nothing?"); return h.digest("hex"); })()`: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
		// Binary output is an ArrayBuffer of the digest's length.
		`crypto.sha256("x", "binary").byteLength`: "32",
		`crypto.randomBytes(16).byteLength`:       "16",
	} {
		if got := jsmoduletest.Eval(t, rt, src).String(); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// An unknown algorithm or output encoding throws, naming it.
func TestUnknownAlgorithmOrEncodingThrows(t *testing.T) {
	rt := jsmoduletest.Runtime(t, Module, "crypto")
	for src, want := range map[string]string{
		`crypto.createHash("sha3")`:            "invalid algorithm: sha3",
		`crypto.sha256("x", "base32")`:         "base32",
		`crypto.hmac("nope", "k", "d", "hex")`: "invalid algorithm: nope",
	} {
		_, err := rt.RunString(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", src, err, want)
		}
	}
}
