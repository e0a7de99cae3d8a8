// The connection's inbound messages (docs/buzz-protocol.md §1.2): EVENT,
// REQ, COUNT, CLOSE and AUTH, and the frames that answer them.

package relay

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
)

// The frames the relay answers with (wire's envelopes).

// Texts that may carry a client's bytes are made valid UTF-8 first: a text
// frame must be (RFC 6455 §8.1).
func noticeFrame(msg string) []byte {
	return wire.NoticeEnvelope{Message: wire.ValidUTF8(msg)}.Append(nil)
}

func (k *conn) notice(msg string) { k.enqueue(noticeFrame(msg)) }

func (k *conn) ok(id string, accepted bool, msg string) {
	k.enqueue(wire.OKEnvelope{EventID: wire.ValidUTF8(id), OK: accepted, Reason: wire.ValidUTF8(msg)}.Append(nil))
}

func (k *conn) closed(sub, msg string) {
	k.enqueue(wire.ClosedEnvelope{SubID: sub, Reason: wire.ValidUTF8(msg)}.Append(nil))
}

func (k *conn) eose(s string) {
	k.enqueue(wire.EOSEEnvelope{SubID: s}.Append(nil))
}

// handle dispatches one client frame (docs/buzz-protocol.md §1.2).
func (k *conn) handle(data []byte) {
	var elems [8][]byte // a frame's elements; REQs with more filters spill
	msg, err := wire.Elements(data, elems[:0])
	if err != nil {
		k.notice("invalid message: " + trimDetail(err.Error()))
		return
	}
	if len(msg) == 0 {
		k.notice("invalid message: empty array")
		return
	}
	verb, err := jsonText(msg[0])
	if err != nil {
		k.notice("invalid message: verb is not a string")
		return
	}
	switch verb {
	case "AUTH":
		k.handleAuth(msg)
	case "EVENT":
		k.handleEvent(msg)
	case "REQ":
		k.r.stats.reqs.Add(1)
		k.handleReq(msg, false)
	case "COUNT":
		k.handleReq(msg, true)
	case "CLOSE":
		k.handleClose(msg)
	default:
		k.notice("invalid message: unknown message type " + strconv.Quote(trimDetail(verb)))
	}
}

// subID decodes a frame's second element, a subscription id.
func subID(msg [][]byte) (string, error) {
	if len(msg) < 2 {
		return "", errors.New("no subscription id")
	}
	return jsonText(msg[1])
}

// jsonText decodes a string element as encoding/json decoded it into a
// string before the relay used the wire scanner: null is "", invalid
// UTF-8 becomes U+FFFD.
func jsonText(raw []byte) (string, error) {
	if string(raw) == "null" {
		return "", nil
	}
	v, err := wire.ParseString(raw)
	return wire.ValidUTF8(v), err
}

func trimDetail(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

func (k *conn) handleClose(msg [][]byte) {
	sub, err := subID(msg)
	if err != nil {
		k.notice("invalid message: CLOSE needs a subscription id")
		return
	}
	if s := k.subs[sub]; s != nil {
		k.c.subs.remove(s)
		delete(k.subs, sub)
	}
	k.closed(sub, "")
}

// handleAuth is NIP-42 as Buzz applies it (docs/buzz-protocol.md §1.5).
func (k *conn) handleAuth(msg [][]byte) {
	if len(msg) < 2 {
		k.notice("invalid message: AUTH needs an event")
		return
	}
	ev, err := nostr.ParseEvent(msg[1])
	if err != nil {
		k.notice("invalid message: AUTH event: " + trimDetail(err.Error()))
		return
	}
	switch {
	case k.authed.Load():
		k.ok(ev.ID, false, "auth-required: already authenticated")
		return
	case k.authFailed:
		k.ok(ev.ID, false, "auth-required: authentication already failed")
		return
	}
	check := nostr.AuthCheck{
		Challenge: k.challenge, RelayURL: k.expected, Now: time.Now(),
		MaxSkew: k.r.cfg.AuthSkew, AllowOATags: true,
	}
	if k.r.cfg.PairingRelayURL != "" {
		check.AlsoAccept = []string{k.r.cfg.PairingRelayURL}
	}
	oa, err := nostr.VerifyAuthEvent(ev, check)
	owner := ""
	if err == nil && oa != nil {
		owner, err = verifyOATag(oa, ev.PubKey, ev.Kind, ev.CreatedAt)
	}
	if err != nil {
		k.authFailed = true
		k.r.stats.authFailed.Add(1)
		k.r.logf(" INFO relay: %s: AUTH refused for %s: %v", k.c.host, trimDetail(ev.PubKey), err)
		k.ok(ev.ID, false, "auth-required: verification failed")
		return
	}
	if k.fi != nil && k.fi.pubkey != ev.PubKey {
		// FI-INV-05: the asserted key must be the key NIP-42 proves.
		k.authFailed = true
		k.r.stats.authFailed.Add(1)
		k.ok(ev.ID, false, fiRejectedWS)
		return
	}
	if !k.r.allowed(ev.PubKey, owner) {
		// handlers/auth.rs: the allowlist gate, after bans, before the
		// relay-membership gate, with the bad signature's text.
		k.authFailed = true
		k.r.stats.authFailed.Add(1)
		k.ok(ev.ID, false, "auth-required: verification failed")
		return
	}
	if !k.c.admitted(ev.PubKey, owner) {
		// handlers/auth.rs: the relay-membership gate after verification.
		k.authFailed = true
		k.r.stats.authFailed.Add(1)
		k.ok(ev.ID, false, "restricted: not a relay member")
		return
	}
	k.r.stats.authOK.Add(1)
	k.pubkey = ev.PubKey
	k.pub, _ = nostr.ParsePubKey(ev.PubKey)
	k.agentOwner = owner
	k.authed.Store(true)
	k.authTimer.Stop()
	if owner != "" {
		k.c.agentOwner.Store(ev.PubKey, owner)
	}
	k.c.presenceConnOpened(ev.PubKey)
	k.ok(ev.ID, true, "")
}

// throttled answers a rate-limited frame: OK/CLOSED (newer relays) or a
// NOTICE with no OK (relay-v0.2.1, Config.LegacyRateLimitNotice).
func (k *conn) throttledEvent(id, reason string) {
	if k.r.cfg.LegacyRateLimitNotice {
		k.notice(reason)
		return
	}
	k.ok(id, false, reason)
}

func (k *conn) handleEvent(msg [][]byte) {
	if len(msg) < 2 {
		k.notice("invalid message: EVENT needs an event")
		return
	}
	ev, err := nostr.ParseEvent(msg[1])
	if err != nil {
		k.notice("invalid message: " + trimDetail(err.Error()))
		return
	}
	if !k.authed.Load() {
		k.ok(ev.ID, false, "auth-required: not authenticated")
		return
	}
	if reason := k.c.limits.frame(k.pubkey, time.Now()); reason != "" {
		k.r.countThrottle(true)
		k.throttledEvent(ev.ID, reason)
		return
	}
	res := k.r.ingest(k.c, ev, ingestAuth{pubkey: k.pubkey, pub: k.pub, agentOwner: k.agentOwner, ws: true})
	if res.throttled {
		k.throttledEvent(ev.ID, res.message)
		return
	}
	k.ok(ev.ID, res.accepted, res.message)
}

// handleReq serves REQ and COUNT (docs/buzz-protocol.md §1.6, §1.7).
func (k *conn) handleReq(msg [][]byte, count bool) {
	sub, err := subID(msg)
	if err != nil {
		k.notice("invalid message: missing subscription id")
		return
	}
	if !k.authed.Load() {
		if !count {
			k.notice("auth-required: authenticate before subscribing")
		}
		k.closed(sub, "auth-required: not authenticated")
		return
	}
	if len(sub) == 0 || len(sub) > k.r.cfg.MaxSubIDLength {
		k.closed(sub, fmt.Sprintf("invalid: subscription id must be 1-%d bytes", k.r.cfg.MaxSubIDLength))
		return
	}
	if reason := k.c.limits.frame(k.pubkey, time.Now()); reason != "" {
		k.r.countThrottle(true)
		if count && k.r.cfg.LegacyRateLimitNotice {
			k.notice(reason)
		} else {
			k.closed(sub, reason)
		}
		return
	}
	raws := msg[2:]
	if len(raws) == 0 {
		k.closed(sub, "invalid: at least one filter is required")
		return
	}
	if len(raws) > k.r.cfg.MaxFilters {
		k.closed(sub, fmt.Sprintf("invalid: too many filters (%d, limit %d)", len(raws), k.r.cfg.MaxFilters))
		return
	}
	filters, err := parseReqFilters(raws)
	if err != nil {
		k.closed(sub, "invalid: "+err.Error())
		return
	}
	mode := accessWS
	if count {
		mode = accessCOUNT
	}
	if reason := k.c.checkReadAccess(filters, k.pubkey, mode, k.r.cfg.MaxChannelsPerREQ); reason != "" {
		k.closed(sub, reason)
		return
	}
	if count {
		n, reason := k.c.count(filters, k.pubkey)
		if reason != "" {
			k.closed(sub, reason)
			return
		}
		k.enqueue(wire.CountEnvelope{SubID: sub, Count: int64(n)}.Append(nil))
		return
	}
	if old := k.subs[sub]; old != nil {
		// A REQ reusing an id replaces the old subscription (NIP-01).
		k.c.subs.remove(old)
		delete(k.subs, sub)
	}
	if len(k.subs) >= k.r.cfg.MaxSubscriptions {
		k.closed(sub, "error: too many subscriptions")
		return
	}
	s := &subscription{conn: k, reader: k.pubkey, id: sub, prefix: wire.AppendEventHead(nil, sub), filters: filters, live: liveFilters(filters), channels: channelScope(filters), authors: authorScope(filters)}
	// Register before replaying so nothing published in between is missed;
	// a live event may then also appear in the replay (clients dedupe by id).
	k.c.subs.add(s)
	k.subs[sub] = s
	for _, e := range k.c.history(filters, k.pubkey, k.r.cfg.MaxHistoricalLimit) {
		k.queue.push(outFrame{data: s.prefix, body: e.AppendJSON(make([]byte, 0, 320+len(e.Content)))}, 0)
	}
	switch d, withhold := k.r.faults.eoseDelay(sub); {
	case withhold:
	case d > 0:
		time.AfterFunc(d, func() { k.eose(sub) })
	default:
		k.eose(sub)
	}
}
