package wire

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Strings: JSON string decoding and quoting outside a scan.

// Unescape decodes a raw string body that RawString validated. Lone
// surrogates become U+FFFD, as in encoding/json.
func Unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			break
		}
		switch raw[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			out = append(out, simpleEscape[raw[i+1]])
			i += 2
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return string(out)
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw, i+2); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return string(out)
		}
	}
	return string(out)
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for k := at; k < at+4; k++ {
		v := hexVal(b[k])
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// ValidUTF8 returns s with each byte of an invalid UTF-8 sequence replaced
// by U+FFFD, as encoding/json decodes strings; s itself when it is valid.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// ParseString decodes b, which must be exactly one JSON string.
func ParseString(b []byte) (string, error) {
	s := New(b)
	s.WS()
	v, err := s.Str()
	if err != nil {
		return "", err
	}
	if !s.AtEnd() {
		return "", s.Fail("data after the string")
	}
	return v, nil
}

// Quote returns the start of b as a Go-quoted string, trimmed to 120 bytes
// on a rune boundary, with "…" when cut: how errors quote what arrived.
func Quote(b []byte) string {
	cut := len(b) > maxQuote
	if cut {
		n := maxQuote
		for k := 0; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); k++ {
			n--
		}
		b = b[:n]
	}
	q := strconv.Quote(string(b))
	if cut {
		q += "…"
	}
	return q
}

// Kind names the JSON type of the value b starts with, for errors.
func Kind(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
