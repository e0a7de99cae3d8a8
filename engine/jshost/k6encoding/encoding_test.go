package k6encoding

import (
	"strings"
	"testing"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule/jsmoduletest"
)

// b64encode and b64decode as k6/encoding gives them (k6 docs,
// javascript-api/k6-encoding), the expected strings from Python's base64
// (an independent encoder): the four alphabets, strings as UTF-8, typed
// arrays and ArrayBuffers, decode to an ArrayBuffer or, with "s", a string.
func TestBase64AsK6(t *testing.T) {
	rt := jsmoduletest.Runtime(t, Module, "encoding")
	for src, want := range map[string]string{
		`encoding.b64encode("hello world")`:                                   "aGVsbG8gd29ybGQ=",
		`encoding.b64encode("hello world", "std")`:                            "aGVsbG8gd29ybGQ=",
		`encoding.b64encode("hello world", "rawstd")`:                         "aGVsbG8gd29ybGQ",
		`encoding.b64encode("?>?", "url")`:                                    "Pz4_",
		`encoding.b64encode("?>?", "std")`:                                    "Pz4/",
		`encoding.b64encode("é", "rawurl")`:                                   "w6k",
		`encoding.b64encode(new Uint8Array([255, 254]).buffer)`:               "//4=",
		`encoding.b64encode(new Uint8Array([0, 255, 254, 0]).subarray(1, 3))`: "//4=",
		`encoding.b64decode("aGVsbG8gd29ybGQ=", "std", "s")`:                  "hello world",
		`encoding.b64decode("aGVsbG8gd29ybGQ", "rawstd", "s")`:                "hello world",
		`encoding.b64decode("Pz4_", "url", "s")`:                              "?>?",
		`encoding.b64decode("aGVsbG8=").byteLength`:                           "5",
		`new Uint8Array(encoding.b64decode("//4=", "std"))[1]`:                "254",
	} {
		if got := jsmoduletest.Eval(t, rt, src).String(); got != want {
			t.Errorf("%s = %q, want %q", src, got, want)
		}
	}
}

// Bad input throws, naming the fault; nothing is guessed.
func TestBase64Errors(t *testing.T) {
	rt := jsmoduletest.Runtime(t, Module, "encoding")
	for src, want := range map[string]string{
		`encoding.b64encode("x", "base32")`:    `unknown base64 encoding "base32"`,
		`encoding.b64decode("%%%", "std")`:     "b64decode:",
		`encoding.b64decode("aGVsbG8", "std")`: "b64decode:", // std needs its padding
		`encoding.b64encode()`:                 "no data given",
	} {
		_, err := rt.RunString(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", src, err, want)
		}
	}
}
