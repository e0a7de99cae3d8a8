package localaddr

import (
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestParseReadsK6sFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"10.1.2.3", []string{"10.1.2.3"}},
		{"127.0.0.1-127.0.0.3, 10.0.0.9", []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "10.0.0.9"}},
		{"10.0.0.255-10.0.1.1", []string{"10.0.0.255", "10.0.1.0", "10.0.1.1"}},
		// An IPv4 CIDR of more than 2 addresses leaves out network and broadcast.
		{"192.168.7.0/29", []string{"192.168.7.1", "192.168.7.2", "192.168.7.3", "192.168.7.4", "192.168.7.5", "192.168.7.6"}},
		{"192.168.7.4/31", []string{"192.168.7.4", "192.168.7.5"}},
		{"192.168.7.9/30", []string{"192.168.7.9", "192.168.7.10"}}, // masked to .8/30
		{"fd00::1-fd00::2", []string{"fd00::1", "fd00::2"}},
		{"fd00::/127", []string{"fd00::", "fd00::1"}},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var s []string
		for i := range int(got.Len()) {
			s = append(s, got.At(i))
		}
		if strings.Join(s, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q = %v, want %v", tc.in, s, tc.want)
		}
	}
}

func TestParseRejectsBadEntries(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1,":           "empty entry",
		"localhost":           `"localhost" is not an IP`,
		"10.0.0.5-10.0.0.1":   "before its first",
		"10.0.0.1-fd00::1":    "another family",
		"10.0.0.1-":           "two IPs",
		"10.0.0.0/33":         "CIDR",
		"fe80::1%a-fe80::2%b": "another family",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want it to say %q", in, err, want)
		}
	}
}

func TestListIsHandedOutInOrder(t *testing.T) {
	l, err := Parse("127.0.0.1-127.0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 7 {
		got = append(got, l.At(i))
	}
	want := "127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.1"
	if strings.Join(got, " ") != want {
		t.Errorf("At(0..6) = %v, want %s", got, want)
	}
	if (List{}).At(5) != "" {
		t.Error("no local_ips: want the kernel's choice (\"\")")
	}
}

// k6 v1.x: VU n (instance-local, 1-based) dials from address n-1, round
// robin; VU 0 (setup, teardown) from the first.
func TestForVUIsK6sRule(t *testing.T) {
	l, err := Parse("127.0.0.2-127.0.0.3,10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for id := range uint64(8) {
		got = append(got, l.ForVU(id).String())
	}
	want := "127.0.0.2 127.0.0.2 127.0.0.3 10.0.0.1 127.0.0.2 127.0.0.3 10.0.0.1 127.0.0.2"
	if strings.Join(got, " ") != want {
		t.Errorf("ForVU(0..7) = %v, want %s", got, want)
	}
	if a := (List{}).ForVU(3); a.IsValid() {
		t.Errorf("empty list: %v, want the zero Addr (the kernel's choice)", a)
	}
}

func TestBindSetsTheSourceAddressOnly(t *testing.T) {
	var d net.Dialer
	Bind(&d, netip.Addr{})
	if d.LocalAddr != nil || d.Control != nil {
		t.Fatal("the zero Addr must leave the dialer alone")
	}
	Bind(&d, netip.MustParseAddr("127.0.0.3"))
	if a, ok := d.LocalAddr.(*net.TCPAddr); !ok || a.String() != "127.0.0.3:0" || d.Control == nil {
		t.Fatalf("LocalAddr %v, Control set %v; want 127.0.0.3:0 and BindNoPort", d.LocalAddr, d.Control != nil)
	}
}

// Large pools are kept as ranges, with no size limit, as k6's pool has
// none: a /8, an IPv6 /64 (counted as 2^64 − 1), a range across the
// 64-bit halves of an IPv6 address.
func TestLargeListsAreRangesNotExpanded(t *testing.T) {
	l, err := Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	if n := l.Len(); n != 1<<24-2 {
		t.Fatalf("10.0.0.0/8: %d addresses, want 2^24-2", n)
	}
	for i, want := range map[int]string{0: "10.0.0.1", 1<<24 - 3: "10.255.255.254", 1<<24 - 2: "10.0.0.1", 256: "10.0.1.1"} {
		if got := l.At(i); got != want {
			t.Errorf("10.0.0.0/8 At(%d) = %s, want %s", i, got, want)
		}
	}
	v6, err := Parse("2001:db8:1::/64")
	if err != nil || v6.Len() != math.MaxUint64 || v6.At(5) != "2001:db8:1::5" || v6.ForVU(1<<40+1).String() != "2001:db8:1::100:0:0" {
		t.Errorf("2001:db8:1::/64: len %d, At(5) %s, ForVU(2^40+1) %v (%v)", v6.Len(), v6.At(5), v6.ForVU(1<<40+1), err)
	}
	c, err := Parse("fd00::ffff:ffff:ffff:ffff-fd00:0:0:1::1, 127.0.0.9")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range int(c.Len()) {
		got = append(got, c.At(i))
	}
	if strings.Join(got, " ") != "fd00::ffff:ffff:ffff:ffff fd00:0:0:1:: fd00:0:0:1::1 127.0.0.9" {
		t.Errorf("range across the halves: %v", got)
	}
}
