package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

func TestHostTemplateExpansion(t *testing.T) {
	cases := []struct {
		rule, tmpl, run string
		n               int
		want            string
	}{
		{"{n} is the community number", "c{n}.load.example.com", "r1", 7, "c7.load.example.com"},
		{"{run} is the run id", "{run}-{n}.localhost", "smoke-3", 0, "smoke-3-0.localhost"},
		{"placeholders repeat", "{n}-{run}-{n}.x", "a", 12, "12-a-12.x"},
		{"a port is kept", "c{n}.localhost:3000", "r", 2, "c2.localhost:3000"},
		{"no template, no host", "", "r", 1, ""},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			if got := ExpandHostTemplate(c.tmpl, c.run, c.n); got != c.want {
				t.Errorf("ExpandHostTemplate(%q, %q, %d) = %q, want %q", c.tmpl, c.run, c.n, got, c.want)
			}
		})
	}
	s := mustParse(t, scenarioSrc("run_id = \"lw\"\n[target]\ncommunity_host_template = \"c{n}.{run}.localhost\"\n[shape]\ncommunities = 3"))
	if got, want := s.CommunityHosts(), []string{"c0.lw.localhost", "c1.lw.localhost", "c2.lw.localhost"}; !slices.Equal(got, want) {
		t.Errorf("CommunityHosts = %q, want %q", got, want)
	}
	if mustParse(t, minimal).CommunityHosts() != nil {
		t.Error("CommunityHosts without a template is not nil")
	}
}

func TestEndpoints(t *testing.T) {
	cases := []struct {
		rule, target string
		n            int
		want         Endpoint
	}{
		{"without a template the URLs are used as written and connect_addr has no effect",
			"ws_url = \"wss://relay.example.com/\"\nhttp_url = \"https://relay.example.com\"\nconnect_addr = \"10.0.0.1:3000\"", 1,
			Endpoint{WSURL: "wss://relay.example.com/", HTTPURL: "https://relay.example.com", Host: "relay.example.com"}},
		{"with a template the public scheme is kept and connect_addr is dialled",
			"ws_url = \"wss://relay.example.com\"\nhttp_url = \"https://relay.example.com\"\nconnect_addr = \"buzz.svc:3000\"\ncommunity_host_template = \"c{n}.{run}.example.com\"", 2,
			Endpoint{WSURL: "wss://c2.t.example.com/", HTTPURL: "https://c2.t.example.com/", Host: "c2.t.example.com", DialAddr: "buzz.svc:3000"}},
		{"a template port reaches the URLs",
			"ws_url = \"ws://127.0.0.1:3000\"\nhttp_url = \"http://127.0.0.1:3000\"\ncommunity_host_template = \"c{n}.localhost:3000\"", 0,
			Endpoint{WSURL: "ws://c0.localhost:3000/", HTTPURL: "http://c0.localhost:3000/", Host: "c0.localhost:3000"}},
		{"embedded relay with a template uses plain schemes",
			"community_host_template = \"c{n}.localhost\"", 1,
			Endpoint{WSURL: "ws://c1.localhost/", HTTPURL: "http://c1.localhost/", Host: "c1.localhost"}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s := mustParse(t, scenarioSrc("[target]\n"+c.target+"\n[shape]\ncommunities = 3"))
			if got := s.Endpoint(c.n); got != c.want {
				t.Errorf("Endpoint(%d) = %+v, want %+v", c.n, got, c.want)
			}
		})
	}
	if !mustParse(t, minimal).Embedded() {
		t.Error("a scenario without URLs does not target the embedded relay")
	}
}

const testSecret = "5c0c523f52a5b6fad39ed2403092df8cebc36318b39383bca6c00808626fab3a"

func TestOperatorKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "operator.key")
	if err := os.WriteFile(keyFile, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.key"), []byte("nsec-not-hex"), 0o600); err != nil {
		t.Fatal(err)
	}
	want, _ := nostr.NewKeys(testSecret)
	wantNsec := want.EncodeNsec()
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cases := []struct {
		rule    string
		target  string
		env     map[string]string
		wantErr string // substring; "" means success
	}{
		{"the default environment variable", "", map[string]string{"BUZZLOAD_OPERATOR_KEY": testSecret}, ""},
		{"a NIP-19 nsec in the variable", "", map[string]string{"BUZZLOAD_OPERATOR_KEY": " " + wantNsec + "\n"}, ""},
		{"a bad nsec names the variable", "", map[string]string{"BUZZLOAD_OPERATOR_KEY": wantNsec[:len(wantNsec)-1] + "q"}, "operator key from $BUZZLOAD_OPERATOR_KEY"},
		{"a named environment variable", "operator_key_env = \"OPS_KEY\"", map[string]string{"OPS_KEY": " " + testSecret + " "}, ""},
		{"the key file, relative to the scenario", "operator_key_file = \"operator.key\"", nil, ""},
		{"the environment wins over the file", "operator_key_file = \"bad.key\"", map[string]string{"BUZZLOAD_OPERATOR_KEY": testSecret}, ""},
		{"an empty variable falls back to the file", "operator_key_file = \"operator.key\"", map[string]string{"BUZZLOAD_OPERATOR_KEY": ""}, ""},
		{"a bad variable names the variable", "", map[string]string{"BUZZLOAD_OPERATOR_KEY": testSecret[:20]}, "operator key from $BUZZLOAD_OPERATOR_KEY"},
		{"a bad file names the file", "operator_key_file = \"bad.key\"", nil, "bad.key"},
		{"a missing file names the file", "operator_key_file = \"missing.key\"", nil, "missing.key"},
		{"no source at all", "", nil, "no operator key"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			s, err := Parse(filepath.Join(dir, "s.toml"), []byte(scenarioSrc("[target]\n"+c.target)))
			if err != nil {
				t.Fatal(err)
			}
			k, err := s.OperatorKey(env(c.env))
			if c.wantErr == "" {
				if err != nil || k.PubKey() != want.PubKey() {
					t.Fatalf("OperatorKey = %v, %v; want the test key", k, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("OperatorKey error %v, want one containing %q", err, c.wantErr)
			}
			if strings.Contains(err.Error(), testSecret[:20]) || strings.Contains(err.Error(), wantNsec[5:25]) {
				t.Fatalf("error reveals the key: %v", err)
			}
			if c.wantErr == "no operator key" && !errors.Is(err, ErrNoOperatorKey) {
				t.Fatalf("error %v is not ErrNoOperatorKey", err)
			}
		})
	}
}
