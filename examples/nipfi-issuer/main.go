// Command nipfi-issuer is a throwaway NIP-FI identity provider for trying
// a run against the embedded relay with NIP-FI enforced (docs/guide.md,
// "Real Buzz"): it makes a fresh ES256 key, writes the assertions of the
// identities it is given (hex pubkeys, one a line: `buzzload plan
// --pubkeys`) as a tokens file, and prints the BUZZ_NIP_FI_ISSUERS value
// that verifies them. Never for a real deployment: the key lives only in
// this process.
//
//	buzzload plan --pubkeys scenarios/local-wide.toml > /tmp/pubkeys
//	go run ./examples/nipfi-issuer -pubkeys /tmp/pubkeys -tokens /tmp/tokens.json > /tmp/issuers.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/fitoken/fitokentest"
)

func main() {
	pubkeys := flag.String("pubkeys", "", "file of hex pubkeys, one a line")
	out := flag.String("tokens", "", "where the tokens file is written (mode 0600)")
	ttl := flag.Duration("ttl", time.Hour, "how long the assertions are valid")
	flag.Parse()
	if *pubkeys == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: nipfi-issuer -pubkeys FILE -tokens FILE [-ttl 1h] > issuers.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(*pubkeys)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nipfi-issuer:", err)
		os.Exit(1)
	}
	is := fitokentest.New("https://issuer.buzzload.localhost", "https://relay.buzzload.localhost")
	toks := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if pk := strings.TrimSpace(line); len(pk) == 64 {
			toks[pk] = is.Mint(pk, *ttl)
		}
	}
	b, _ := json.Marshal(toks)
	if err := os.WriteFile(*out, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "nipfi-issuer:", err)
		os.Exit(1)
	}
	fmt.Println(is.IssuersJSON())
}
