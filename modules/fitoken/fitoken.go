// Package fitoken supplies NIP-FI assertions (docs/buzz-names.md §b): the
// compact JWS a relay enforcing NIP-FI (BUZZ_NIP_FI_MODE=enforce) wants in
// a `Nostr-Federated-Identity: Bearer` field for each identity, from a file
// the user names or a command they name that prints one. Tokens are
// secrets: no error, log or report carries one.
package fitoken

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// PubkeyEnv names the variable a token command reads the identity from.
const PubkeyEnv = "BUZZLOAD_NIP_FI_PUBKEY"

// refreshBefore is how long before its exp a command's token is minted
// again, so a session never starts on a token about to lapse.
const refreshBefore = 60 * time.Second

// commandTimeout bounds one run of the token command.
const commandTimeout = 10 * time.Second

// Source supplies assertions per hex pubkey. Safe for concurrent use.
type Source struct {
	file    map[string]string // from a file: pubkey → token
	command string            // else run with sh -c, PubkeyEnv set
	now     func() time.Time

	mu    sync.Mutex
	cache map[string]cached
	sem   chan struct{} // bounds concurrent commands (a ramp connects thousands)
}

type cached struct {
	token string
	until time.Time
}

// FromFile reads a JSON object of hex pubkey → compact JWS.
func FromFile(path string) (*Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NIP-FI tokens file: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil {
		// The decoder's message may quote the file: say only where.
		return nil, fmt.Errorf("NIP-FI tokens file %s: not a JSON object of pubkey to token", path)
	}
	for pk, tok := range m {
		if len(pk) != 64 || strings.Count(tok, ".") != 2 {
			return nil, fmt.Errorf("NIP-FI tokens file %s: entry %.16s…: want a 64-hex pubkey and a compact JWS", path, pk)
		}
	}
	return &Source{file: m, now: time.Now}, nil
}

// FromCommand runs command (with sh -c) for each identity, PubkeyEnv set to
// its hex pubkey; the command prints the token on stdout.
func FromCommand(command string) *Source {
	return &Source{command: command, now: time.Now, cache: map[string]cached{}, sem: make(chan struct{}, 4)}
}

// Assertion is pubkey's token.
func (s *Source) Assertion(ctx context.Context, pubkey string) (string, error) {
	if s.file != nil {
		tok, ok := s.file[pubkey]
		if !ok {
			return "", fmt.Errorf("NIP-FI: the tokens file has no token for %.16s…", pubkey)
		}
		return tok, nil
	}
	s.mu.Lock()
	c, ok := s.cache[pubkey]
	s.mu.Unlock()
	if ok && s.now().Before(c.until) {
		return c.token, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-s.sem }()
	tok, err := s.run(ctx, pubkey)
	if err != nil {
		return "", err
	}
	until := s.now().Add(5 * time.Minute)
	if exp, ok := expiry(tok); ok {
		until = exp.Add(-refreshBefore)
	}
	s.mu.Lock()
	s.cache[pubkey] = cached{token: tok, until: until}
	s.mu.Unlock()
	return tok, nil
}

func (s *Source) run(ctx context.Context, pubkey string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", s.command)
	cmd.Env = append(os.Environ(), PubkeyEnv+"="+pubkey)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// stderr is the command's own words, clipped; stdout (the token) never.
		msg := strings.TrimSpace(errb.String())
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return "", fmt.Errorf("NIP-FI token command for %.16s…: %v: %s", pubkey, err, msg)
	}
	tok := strings.TrimSpace(out.String())
	if strings.Count(tok, ".") != 2 || strings.ContainsAny(tok, " \n\t,") {
		return "", fmt.Errorf("NIP-FI token command for %.16s…: its output is not one compact JWS", pubkey)
	}
	return tok, nil
}

// expiry reads a token's exp without verifying it (the relay verifies):
// only to know when to mint again.
func expiry(tok string) (time.Time, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var c struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Exp == nil {
		return time.Time{}, false
	}
	return time.Unix(int64(*c.Exp), 0), true
}
