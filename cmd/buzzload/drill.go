package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

const drillUsage = `usage: buzzload drill [flags] HTTP_URL

Asks a relay started with "buzzload relay" (in its own process, on another
machine, in a pod) to perform a drill now: restart (1012 "relay restarting"
to every socket, then down for --duration), stall, limiter_outage or
slow_store (docs/guide.md, "Drills"). It is what a scenario's [[drill]]
command runs against such a relay, e.g.
  command = ["buzzload", "drill", "--kind", "restart", "--duration", "2s", "http://10.0.0.5:7777"]
The request is signed (NIP-98) with the operator key from
$BUZZLOAD_OPERATOR_KEY (64 hex or nsec1…), never printed. Exit 0 when the
relay performed it, 1 when it refused or could not be reached, 2 on bad flags.

flags:
`

// drillCmd runs `buzzload drill`.
func drillCmd(ctx context.Context, args []string, env cliEnv) int {
	fs := pflag.NewFlagSet("drill", pflag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	kind := fs.String("kind", "", "restart, stall, limiter_outage or slow_store")
	dur := fs.Duration("duration", 0, "how long the relay stays down, stalled, without its limiter or slow")
	jitter := fs.Duration("jitter", 0, "a restart's closes spread over [1 ms, jitter] (at most 20s)")
	delay := fs.Duration("delay", 0, "slow_store: each store read and write this much slower (default 200ms)")
	origin := fs.String("operator-origin", "", "the origin the relay's operator routes check NIP-98 u tags against (default: HTTP_URL's)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprint(env.Stdout, drillUsage)
			fmt.Fprint(env.Stdout, fs.FlagUsages())
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || *kind == "" {
		fmt.Fprintf(env.Stderr, "buzzload drill: want --kind and one HTTP_URL (buzzload drill --help)\n")
		return 2
	}
	raw, ok := lookupFrom(env.Env)("BUZZLOAD_OPERATOR_KEY")
	if !ok || strings.TrimSpace(raw) == "" {
		fmt.Fprintf(env.Stderr, "buzzload drill: $BUZZLOAD_OPERATOR_KEY is empty: the relay's operator key signs the request\n")
		return 2
	}
	keys, err := nostr.NewKeys(raw)
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload drill: operator key from $BUZZLOAD_OPERATOR_KEY: %s\n", termtext.Lines(err.Error()))
		return 2
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: relayclient.Target{HTTPURL: fs.Arg(0)}, Keys: keys,
		OperatorOrigin: *origin, Timeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintf(env.Stderr, "buzzload drill: %s\n", termtext.Lines(err.Error()))
		return 2
	}
	rep, res := h.Drill(ctx, *kind, dur.Seconds(), jitter.Seconds(), float64(delay.Milliseconds()), relayclient.CallOptions{})
	if res.Outcome != relayclient.OutcomeOK {
		fmt.Fprintf(env.Stderr, "buzzload drill: %s\n", termtext.Lines(res.Error))
		return 1
	}
	fmt.Fprintf(env.Stdout, "buzzload drill: %s performed (%d sockets open)\n", termtext.Lines(rep.Kind), rep.Sockets)
	return 0
}
