package jshost

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/grafana/sobek"
)

// TextEncoder and TextDecoder are globals in k6 v2.2 (release notes
// v2.2.0, #6182: "available as standard globals in both the init and VU
// contexts"; k6 registers grafana/sobek-webapi-encoding). That library is
// not served by the module proxy here, so this is a small implementation
// of the WHATWG Encoding API written from the standard and from what k6
// v2.2.0 was observed to do (6 Dec 2026): TextEncoder.encode (no
// encodeInto, as k6), TextDecoder(label, {fatal, ignoreBOM}) for UTF-8 and
// UTF-16LE/BE with decode(input, {stream}); any other label is
// `RangeError: unsupported encoding: <label>`, as k6 answers.

// encodingLabels are the WHATWG labels k6 v2.2 decodes, by encoding.
var encodingLabels = map[string]string{"utf-8": "utf-8", "utf8": "utf-8", "unicode-1-1-utf-8": "utf-8",
	"unicode11utf8": "utf-8", "unicode20utf8": "utf-8", "x-unicode20utf8": "utf-8",
	"utf-16le": "utf-16le", "utf-16": "utf-16le", "ucs-2": "utf-16le", "unicode": "utf-16le",
	"csunicode": "utf-16le", "iso-10646-ucs-2": "utf-16le", "unicodefeff": "utf-16le",
	"utf-16be": "utf-16be", "unicodefffe": "utf-16be"}

func newTextEncoder(v *VU) sobek.Value {
	rt := v.rt
	return rt.ToValue(func(call sobek.ConstructorCall) *sobek.Object {
		o := call.This
		_ = o.Set("encode", func(c sobek.FunctionCall) sobek.Value {
			s := ""
			if a := c.Argument(0); !sobek.IsUndefined(a) {
				s = a.String()
			}
			return uint8Array(rt, []byte(toUSV(s)))
		})
		_ = o.Set("encoding", "utf-8")
		return nil
	})
}

func newTextDecoder(v *VU) sobek.Value {
	rt := v.rt
	return rt.ToValue(func(call sobek.ConstructorCall) *sobek.Object {
		label := "utf-8"
		if a := call.Argument(0); !sobek.IsUndefined(a) {
			label = a.String()
		}
		enc, ok := encodingLabels[strings.ToLower(strings.TrimSpace(label))]
		if !ok {
			ctor, _ := sobek.AssertConstructor(rt.Get("RangeError"))
			e, _ := ctor(nil, rt.ToValue("unsupported encoding: "+label))
			panic(e)
		}
		var fatal, ignoreBOM bool
		if opts, ok := call.Argument(1).(*sobek.Object); ok {
			fatal = opts.Get("fatal") != nil && opts.Get("fatal").ToBoolean()
			ignoreBOM = opts.Get("ignoreBOM") != nil && opts.Get("ignoreBOM").ToBoolean()
		}
		o := call.This
		var pending []byte // an incomplete sequence held by a streaming decode
		bomSeen := false
		_ = o.Set("decode", func(c sobek.FunctionCall) sobek.Value {
			var in []byte
			if a, ok := c.Argument(0).(*sobek.Object); ok {
				in = viewBytes(rt, a)
			}
			stream := false
			if opts, ok := c.Argument(1).(*sobek.Object); ok && opts.Get("stream") != nil {
				stream = opts.Get("stream").ToBoolean()
			}
			b := append(append([]byte(nil), pending...), in...)
			pending = nil
			if stream {
				// keep a trailing incomplete sequence for the next call
				if cut := incompleteTail(enc, b); cut > 0 {
					pending = append(pending, b[len(b)-cut:]...)
					b = b[:len(b)-cut]
				}
			}
			if !ignoreBOM && !bomSeen {
				b = stripBOM(enc, b)
			}
			if len(b) > 0 || !stream {
				bomSeen = stream
			}
			out, valid := decodeText(enc, b)
			if fatal && !valid {
				panic(rt.NewTypeError("The encoded data was not valid for encoding " + enc))
			}
			return rt.ToValue(out)
		})
		// Set after decode: k6's decoder lists decode, encoding, fatal, ignoreBOM.
		_ = o.Set("encoding", enc)
		_ = o.Set("fatal", fatal)
		_ = o.Set("ignoreBOM", ignoreBOM)
		return nil
	})
}

// decodeText decodes b, invalid sequences replaced by U+FFFD; valid says
// there were none.
func decodeText(enc string, b []byte) (string, bool) {
	if enc == "utf-8" {
		return strings.ToValidUTF8(string(b), "\uFFFD"), utf8.Valid(b)
	}
	valid := len(b)%2 == 0
	u := make([]uint16, len(b)/2)
	for i := range u {
		if enc == "utf-16le" {
			u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
		} else {
			u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		}
	}
	var sb strings.Builder
	for i := 0; i < len(u); i++ {
		c := rune(u[i])
		switch {
		case utf16.IsSurrogate(c) && c < 0xDC00 && i+1 < len(u) && u[i+1] >= 0xDC00 && u[i+1] <= 0xDFFF:
			sb.WriteRune(utf16.DecodeRune(c, rune(u[i+1])))
			i++
		case utf16.IsSurrogate(c):
			sb.WriteRune(utf8.RuneError)
			valid = false
		default:
			sb.WriteRune(c)
		}
	}
	if len(b)%2 == 1 {
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String(), valid
}

// stripBOM removes enc's byte order mark from the start of b.
func stripBOM(enc string, b []byte) []byte {
	bom := map[string][]byte{"utf-8": {0xEF, 0xBB, 0xBF}, "utf-16le": {0xFF, 0xFE}, "utf-16be": {0xFE, 0xFF}}[enc]
	if len(b) >= len(bom) && string(b[:len(bom)]) == string(bom) {
		return b[len(bom):]
	}
	return b
}

// incompleteTail is the length of a trailing sequence that a later byte
// could still complete (0: none).
func incompleteTail(enc string, b []byte) int {
	if enc != "utf-8" {
		n := len(b) % 2
		if n == 0 && len(b) >= 2 { // a lead surrogate waiting for its pair
			last := rune(b[len(b)-2]) | rune(b[len(b)-1])<<8
			if enc == "utf-16be" {
				last = rune(b[len(b)-2])<<8 | rune(b[len(b)-1])
			}
			if last >= 0xD800 && last < 0xDC00 {
				return 2
			}
		}
		return n
	}
	for n := 1; n <= 3 && n <= len(b); n++ {
		c := b[len(b)-n]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 { // a lead byte: complete if it has its continuation bytes
			need := 2
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			}
			if n < need {
				return n
			}
			return 0
		}
	}
	return 0
}

// toUSV replaces lone surrogates (which Go strings from JS carry as
// U+FFFD already) so the encoding is well formed.
func toUSV(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// uint8Array is a new Uint8Array over b.
func uint8Array(rt *sobek.Runtime, b []byte) sobek.Value {
	ctor, _ := sobek.AssertConstructor(rt.Get("Uint8Array"))
	o, err := ctor(nil, rt.ToValue(rt.NewArrayBuffer(b)))
	if err != nil {
		panic(err)
	}
	return o
}

// viewBytes is the bytes an ArrayBuffer, a typed array or a DataView
// covers (shared, not copied: encodeInto writes through it).
func viewBytes(rt *sobek.Runtime, o *sobek.Object) []byte {
	if ab, ok := o.Export().(sobek.ArrayBuffer); ok {
		return ab.Bytes()
	}
	buf, ok := o.Get("buffer").Export().(sobek.ArrayBuffer)
	if !ok {
		panic(rt.NewTypeError("The provided value is not of type '(ArrayBuffer or ArrayBufferView)'"))
	}
	off, n := o.Get("byteOffset").ToInteger(), o.Get("byteLength").ToInteger()
	all := buf.Bytes()
	if off < 0 || n < 0 || off+n > int64(len(all)) {
		return nil
	}
	return all[off : off+n]
}
