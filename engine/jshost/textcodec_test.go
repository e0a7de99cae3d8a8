package jshost

import "testing"

// TextEncoder and TextDecoder are globals, as in k6 v2.2 (#6182); each
// expectation below is what k6 v2.2.0 printed for the same script (6 Dec
// 2026): the round trip, a fatal decoder's TypeError, an unknown label's
// `RangeError: unsupported encoding: <label>`, UTF-16LE with a surrogate
// pair, a BOM dropped, a streamed sequence split across calls, and the
// objects' keys in k6's order. Fails without textcodec.go: TextEncoder is
// not defined.
func TestTextEncoderAndDecoderAsK6(t *testing.T) {
	h := newHarness(t, map[string]string{"main.js": `
const out = [];
const text = "Hello, 世界 👋";
const enc = new TextEncoder().encode(text);
out.push(enc instanceof Uint8Array, enc.length);
const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
out.push(fatal.fatal, fatal.ignoreBOM, fatal.decode(enc) === text);
try { fatal.decode(new Uint8Array([0xff])); } catch (e) { out.push(e instanceof TypeError); }
try { new TextDecoder("latin1"); } catch (e) { out.push(String(e)); }
out.push(new TextDecoder(" UTF8 ").encoding, new TextDecoder("utf-16").encoding);
out.push(new TextDecoder("utf-16le").decode(new Uint8Array([0x41, 0, 0x3d, 0xd8, 0x4b, 0xdc])));
out.push(new TextDecoder().decode(new Uint8Array([0xEF, 0xBB, 0xBF, 0x41, 0xff])));
const s = new TextDecoder();
out.push(s.decode(new Uint8Array([0xE4, 0xB8]), { stream: true }) + "|" + s.decode(new Uint8Array([0x96])));
out.push(Object.keys(new TextDecoder()).join(","), Object.keys(new TextEncoder()).join(","));
export default function () { globalThis.result = out.join(" ; "); }
`})
	vu := run1(t, h, h.bundle(t, "main.js"))
	want := "true ; 18 ; true ; true ; true ; true ; RangeError: unsupported encoding: latin1 ; utf-8 ; utf-16le ; A👋 ; A\uFFFD ; |世 ; decode,encoding,fatal,ignoreBOM ; encode,encoding"
	if got := vu.rt.Get("result").String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
