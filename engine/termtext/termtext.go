// Package termtext makes text that came from the network or a script safe
// to print on a terminal: control characters are shown as Go escapes, so a
// relay cannot clear the screen, move the cursor or forge a line such as
// "result: ok" (issue 30 F4; docs/security.md).
package termtext

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Clean returns s with every C0 control (newlines and tabs included),
// DEL, C1 control, Unicode line/paragraph separator and bidirectional
// override escaped as strconv does (\x1b, \n, \u202e), and invalid UTF-8
// bytes as \xNN. Text without any of them is returned unchanged.
func Clean(s string) string {
	if !needs(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case unsafe(r):
			q := strconv.QuoteRune(r) // 'x' with the rune escaped
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Lines is Clean for multi-line messages of our own that may quote network
// text (errors printed by the commands): newlines and tabs are kept, every
// other control character is escaped.
func Lines(s string) string {
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		fields := strings.Split(p, "\t")
		for j, f := range fields {
			fields[j] = Clean(f)
		}
		parts[i] = strings.Join(fields, "\t")
	}
	return strings.Join(parts, "\n")
}

func needs(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafe(r) {
			return true
		}
		i += n
	}
	return false
}

func unsafe(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	}
	return false
}
