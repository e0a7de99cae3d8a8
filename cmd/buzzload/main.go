// Command buzzload is a k6-compatible load generator for Buzz relays.
//
// Each subcommand lives in its own file and has the same shape: it takes its
// arguments and standard streams and returns the process exit code, so tests
// can call it directly.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/buzzload/buzzload/engine/jshost/dnsresolve"
)

// command is one `buzzload <name>` subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, env cliEnv) int
}

// cliEnv is what a subcommand may touch of the process: its streams and
// environment. Passing it explicitly keeps subcommands testable.
type cliEnv struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Env    []string // KEY=VALUE, as os.Environ
	// Signals delivers SIGINT/SIGTERM to commands that handle them (run, relay).
	Signals <-chan os.Signal
	// Lookup resolves host names for k6/http and WebSockets (the dns
	// option's resolver looks up through it); nil: Go's resolver.
	Lookup dnsresolve.LookupFunc
}

func commands() map[string]command {
	return map[string]command{
		"run":             {"run a k6-style script (or a scenario .toml) against a relay", runCmd},
		"relay":           {"run the local Buzz-compatible relay", relayCmd},
		"capacity":        {"search how many people the deployment holds at its service level ([capacity] of a scenario)", capacityCmd},
		"capacity-worker": {"serve a capacity search's probes on this machine (buzzload capacity --runners)", capacityWorkerCmd},
		"drill":           {"ask a `buzzload relay` to perform a drill now (restart, stall, limiter outage, slow store)", drillCmd},
		"seed":            {"provision a scenario's communities, channels, members and history", seedCmd},
		"teardown":        {"archive and delete a scenario's communities", teardownCmd},
		"merge":           {"merge the JSON results of several execution segments", mergeCmd},
		"compare":         {"compare the per-operation results of two runs", compareCmd},
		"report":          {"write a run's result or Buzz report as one self-contained HTML page", reportCmd},
		"plan":            {"simulate a scenario's clients without sockets: what the relay would see", planCmd},
		"version":         {"print the version and commit", versionCmd},
		"features":        {"list the feature flags --features can enable (k6 features)", featuresCmd},
		"archive":         {"pack a script and the files it reads into one tar (k6 archive)", archiveCmd},
		"cloud":           {"run --local-execution: run here, streamed to Grafana Cloud k6 (k6 cloud run)", cloudCmd},
		"inspect":         {"print a test's options and execution requirements as JSON (k6 inspect)", inspectCmd},
	}
}

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	env := cliEnv{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Env: os.Environ(), Signals: sigs}
	os.Exit(dispatch(context.Background(), os.Args[1:], env))
}

func dispatch(ctx context.Context, args []string, env cliEnv) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(env.Stdout, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-v" { // k6's root flag
		return versionCmd(ctx, args[1:], env)
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "buzzload: unknown command %q\n\n", args[0])
		usage(env.Stderr, cmds)
		return 2
	}
	return c.run(ctx, args[1:], env)
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: buzzload <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'buzzload <command> --help' for a command's flags.")
}
