// Package preflight checks, before any seeding or traffic, that the target
// answers: NIP-11, a WebSocket that connects and authenticates, the
// operator API (issue 13). A dead relay must read as "relay down", not as
// a load failure.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Error says which part of the target did not answer before any
// seeding or traffic: a dead relay must read as "relay down", not as a load
// failure (issue 13). cmd/buzzload exits with its own code for it.
type Error struct {
	What string // "NIP-11", "WebSocket", "operator API"
	URL  string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("preflight: %s at %s failed: %v", e.What, e.URL, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// preflightTimeout bounds each check when the scenario sets no
// connect_timeout_secs.
const preflightTimeout = 10 * time.Second

// Target is where the checks go. Before seeding a templated target,
// the community hosts may not exist yet, so the checks go to the deployment
// itself (ws_url and http_url as written, dialled at connect_addr), where
// the operator API lives too; clients check community 0's host as they
// dial it.
func Target(sc *scenario.Scenario, seeding bool) relayclient.Target {
	t := sc.Target
	if t.CommunityHostTemplate == "" {
		return relayclient.Target{WSURL: t.WSURL, HTTPURL: t.HTTPURL, Identity: sc.Endpoint(0).Identity}
	}
	if !seeding {
		return CommunityTarget(sc, 0)
	}
	tgt := relayclient.Target{WSURL: t.WSURL, HTTPURL: t.HTTPURL, Identity: sc.Endpoint(0).Identity}
	if u, err := url.Parse(t.WSURL); err == nil && t.ConnectAddr != "" {
		tgt.Host, tgt.ConnectAddr = u.Host, t.ConnectAddr
	}
	return tgt
}

// CommunityTarget is where community n is reached: its endpoint's URLs,
// Host and dial address (the URL's own host without a template).
func CommunityTarget(sc *scenario.Scenario, n int) relayclient.Target {
	ep := sc.Endpoint(n)
	return relayclient.Target{WSURL: ep.WSURL, HTTPURL: ep.HTTPURL, Host: ep.Host, ConnectAddr: ep.DialAddr, Identity: ep.Identity}
}

// DeploymentTarget is where a seed (or teardown) reaches the deployment
// itself, before its community hosts exist: the run's preflight target.
func DeploymentTarget(sc *scenario.Scenario) relayclient.Target { return Target(sc, true) }

// Check checks that NIP-11 answers and that a WebSocket connects and
// authenticates as keys. Nothing it does is recorded as an operation.
func Check(ctx context.Context, sc *scenario.Scenario, tgt relayclient.Target, keys *nostr.Keys, seeding bool, tr http.RoundTripper) ([]report.RelayLimit, error) {
	timeout := preflightTimeout
	if sc.Target.ConnectTimeoutSecs > 0 {
		timeout = scenario.Secs(sc.Target.ConnectTimeoutSecs)
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Transport: tr, Timeout: timeout})
	if err != nil {
		return nil, &Error{What: "NIP-11", URL: tgt.HTTPURL, Err: err}
	}
	var doc struct {
		NIPs []int `json:"supported_nips"`
		report.NIP11Limitation
	}
	if r := h.NIP11(ctx, "preflight", &doc); r.Outcome != relayclient.OutcomeOK {
		return nil, &Error{What: "NIP-11 (GET / with Accept: application/nostr+json)", URL: tgt.HTTPURL, Err: errors.New(r.Error)}
	}
	limits := report.RelayLimitsOf(doc.NIP11Limitation)
	membership := slices.Contains(doc.NIPs, 43) // Buzz lists NIP 43 only when it enforces relay membership
	if membership && !seeding {
		// The clients are about to authenticate: check one of them, so a
		// closed relay that does not know the run's identities stops the run
		// here instead of looping through refused sessions.
		if hs := sc.Clients(scenario.KindHuman, sc.PeakUsers(), scenario.Shard{Count: 1}); len(hs) > 0 {
			keys = sc.Keys(hs[0])
		}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := relayclient.Connect(cctx, relayclient.Config{Target: tgt, Keys: keys, ConnectTimeout: timeout})
	if err != nil {
		if strings.Contains(err.Error(), notRelayMember) {
			if seeding {
				return limits, nil // reachable; the seed makes the run's identities members
			}
			return nil, &Error{What: "WebSocket NIP-42 AUTH of the run's identities", URL: tgt.WSURL,
				Err: fmt.Errorf("%w: the relay requires relay membership (BUZZ_REQUIRE_RELAY_MEMBERSHIP=true) and this identity is not a member: seed the run (buzzload seed, or the script's setup) so its owner adds them with kind 9030, or have an admin add them", err)}
		}
		if g, ok := AuthGate(err.Error()); ok {
			return nil, &Error{What: "WebSocket NIP-42 AUTH (" + g.Name + ")", URL: tgt.WSURL, Err: fmt.Errorf("%w: %s", err, g.Advice)}
		}
		return nil, &Error{What: "WebSocket (connect and NIP-42 AUTH)", URL: tgt.WSURL, Err: err}
	}
	c.Close()
	return limits, nil
}

// Gate is one of Buzz's admission gates, named with the setting that turns
// it on and what to do about it.
type Gate struct {
	Name, Advice string
}

// authGates are Buzz's AUTH refusals after the signature checks, in
// handle_auth's order (handlers/auth.rs; docs/buzz-names.md §b, §c), and
// NIP-FI's denial texts. Each stops the run at the preflight (exit 111)
// instead of a run of refused sessions.
var authGates = []struct {
	text string
	gate Gate
}{
	{"blocked: you are banned from this community", Gate{"community ban",
		"an owner or moderator of the community banned this identity (Buzz's moderation state, always on): lift the ban, or run with another run_id so the run's identities are new"}},
	{"error: internal error checking restriction state", Gate{"community ban",
		"the relay could not read its ban state (its database) and refuses every AUTH until it can"}},
	{"auth-required: verification failed", Gate{"pubkey allowlist or signature",
		"the relay refused the AUTH event: either its pubkey allowlist is on (BUZZ_PUBKEY_ALLOWLIST=true) and does not list this identity — list the run's identities (`buzzload plan --pubkeys SCENARIO.toml`) in its pubkey_allowlist table — or the AUTH's relay tag is not the URL the relay expects (check ws_url and any proxy in front of it)"}},
	{"restricted: dntls approval pending", Gate{"DNTLS admission",
		"BUZZ_DNTLS_ADMISSION=approve: this identity's application waits for a DNTLS admin's approval; approve the run's identities or run with BUZZ_DNTLS_ADMISSION=auto"}},
	{"error: internal error applying DNTLS admission", Gate{"DNTLS admission",
		"the relay failed to apply its DNTLS admission (BUZZ_DNTLS_ADMISSION) and refuses the AUTH"}},
	{`HTTP 401: "authentication required`, Gate{"NIP-FI",
		"the relay enforces NIP-FI enterprise admission (BUZZ_NIP_FI_MODE=enforce) and refused the upgrade without a Nostr-Federated-Identity token: give the run its tokens ([target] nip_fi_tokens_file or nip_fi_token_command, or $BUZZLOAD_NIP_FI_TOKENS_FILE / $BUZZLOAD_NIP_FI_TOKEN_COMMAND)"}},
	{`HTTP 403: "evidence rejected`, Gate{"NIP-FI",
		"the relay enforces NIP-FI (BUZZ_NIP_FI_MODE=enforce) and refused the Nostr-Federated-Identity token at the upgrade (its issuer, signature, audience, age or nostr_pubkey; BUZZ_NIP_FI_ISSUERS)"}},
	{"auth-required: authentication required", Gate{"NIP-FI",
		"the relay enforces NIP-FI enterprise admission (BUZZ_NIP_FI_MODE=enforce) and the upgrade carried no Nostr-Federated-Identity token: give the run its tokens ([target] nip_fi_tokens_file or nip_fi_token_command)"}},
	{"restricted: evidence rejected", Gate{"NIP-FI",
		"the relay enforces NIP-FI (BUZZ_NIP_FI_MODE=enforce) and refused the Nostr-Federated-Identity token (its issuer, signature, audience or age; BUZZ_NIP_FI_ISSUERS)"}},
	{"restricted: authorization denied", Gate{"NIP-FI",
		"the relay enforces NIP-FI (BUZZ_NIP_FI_MODE=enforce) and the token's identity is not authorised"}},
	{"restricted: authorization unavailable", Gate{"NIP-FI",
		"the relay enforces NIP-FI but cannot verify tokens now (its issuers' keys not loaded, or BUZZ_NIP_FI_MODE=deny_protected)"}},
}

// AuthGate names the admission gate an AUTH refusal (or an upgrade's
// denial body) comes from; ok is false for any other failure.
func AuthGate(refusal string) (Gate, bool) {
	for _, g := range authGates {
		if strings.Contains(refusal, g.text) {
			return g.gate, true
		}
	}
	return Gate{}, false
}

// notRelayMember is Buzz's AUTH refusal on a closed relay (handlers/auth.rs).
const notRelayMember = "restricted: not a relay member"

// Operator checks that the operator API answers the operator key:
// a read-only availability query for community 0's host.
func Operator(ctx context.Context, sc *scenario.Scenario, keys *nostr.Keys, origin string, tr http.RoundTripper) error {
	timeout := preflightTimeout
	if sc.Target.ConnectTimeoutSecs > 0 {
		timeout = scenario.Secs(sc.Target.ConnectTimeoutSecs)
	}
	tgt := Target(sc, true)
	if origin == "" {
		if u, err := url.Parse(sc.Target.HTTPURL); err == nil {
			origin = u.Scheme + "://" + u.Host
		}
	}
	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: tgt, Keys: keys, Transport: tr, Timeout: timeout, OperatorOrigin: origin})
	if err != nil {
		return &Error{What: "operator API", URL: origin, Err: err}
	}
	if _, r := h.CommunityAvailability(ctx, sc.CommunityHost(0), relayclient.CallOptions{Op: "preflight"}); r.Outcome != relayclient.OutcomeOK {
		return &Error{What: "operator API (GET /operator/communities/availability)", URL: origin, Err: errors.New(r.Error)}
	}
	return nil
}
