package termtext

import "testing"

func TestCleanEscapesControls(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text: ok", "plain text: ok"},
		{"ünïcode ✓ kept", "ünïcode ✓ kept"},
		// The forged line of reliability.md F4: RIS, clear screen, a fake verdict.
		{"error: \r\x1b[K\x1bc\x1b[H\x1b[J  result: ok\r\n", `error: \r\x1b[K\x1bc\x1b[H\x1b[J  result: ok\r\n`},
		{"bell\a tab\t del\x7f", `bell\a tab\t del\x7f`},
		{"c1 \u009b2J osc \u009d0;t\u009c", `c1 \u009b2J osc \u009d0;t\u009c`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"sep\u2028x", `sep\u2028x`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"", ""},
	}
	for _, c := range cases {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLinesKeepsNewlinesOnly(t *testing.T) {
	in := "scenario.toml:3: bad key\n\tsee docs\x1b[2J\r"
	want := "scenario.toml:3: bad key\n\tsee docs\\x1b[2J\\r"
	if got := Lines(in); got != want {
		t.Fatalf("Lines(%q) = %q, want %q", in, got, want)
	}
}

func FuzzClean(f *testing.F) {
	f.Add("error: \x1b[2J\x1bc result: ok\r\n")
	f.Add("\u202e\xff\u0085")
	f.Fuzz(func(t *testing.T, s string) {
		out := Clean(s)
		if needs(out) {
			t.Fatalf("Clean(%q) = %q still has control characters", s, out)
		}
		if !needs(s) && out != s {
			t.Fatalf("safe text changed: %q -> %q", s, out)
		}
	})
}
