package localaddr

import (
	"net/netip"
	"testing"
)

// Parse takes k6 option strings from scripts, config files, env and flags:
// whatever it is given, it returns an error or a list whose At and ForVU
// hand out valid addresses.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "127.0.0.1-127.0.0.9", "10.0.0.0/30", "fd00::/126", "::1-::3",
		"1.2.3.4,5.6.7.8-5.6.7.9,9.9.9.0/31", "255.255.255.254-255.255.255.255", "fe80::1%eth0-fe80::2", " , ", "1.2.3.4-", "0.0.0.0/16"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		for _, i := range []int{0, 1, int(min(l.Len(), 1<<30)), 7919} {
			if a := l.At(i); l.Len() > 0 {
				if _, err := netip.ParseAddr(a); err != nil {
					t.Fatalf("%q: At(%d) = %q: %v", s, i, a, err)
				}
			} else if a != "" {
				t.Fatalf("%q: empty list gave %q", s, a)
			}
			if a := l.ForVU(uint64(i)); l.Len() > 0 && !a.IsValid() {
				t.Fatalf("%q: ForVU(%d) invalid", s, i)
			}
		}
	})
}
