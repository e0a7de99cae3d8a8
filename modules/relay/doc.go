// Package relay is the embedded Buzz-compatible relay: the default
// target of `buzzload run` and the integration tests' real counterpart. It
// enforces the contracts of docs/buzz-protocol.md at the wire
// — reason strings word for word — so a generator bug shows up here and not
// only against a production relay.
//
// # Go API
//
//	cfg := relay.DefaultConfig()      // Buzz's defaults; every field has a BUZZ_* variable
//	cfg.Listen = "127.0.0.1:0"
//	r, err := relay.New(cfg)          // validates, prepares keys; no socket yet
//	err = r.Start(ctx)                     // listens and serves; ctx cancellation closes
//	u := r.URLs()                          // {WS, HTTP, Host} of the deployment community
//	r.RelayPubKey(), r.OperatorPubKey(), r.OperatorKeys(), r.OperatorOrigin()
//	r.Faults()                             // fault injection (Go API only)
//	r.Stats()                              // counters: connections, AUTH, events, deliveries, drops
//	r.Close()                              // drain: 503 to new upgrades, 1012 to open sockets
//
// One http.Server serves every community; the normalised Host header picks
// the community (docs/buzz-protocol.md §3.1). The deployment community is the listen
// address as clients dial it (Config.DeploymentHost overrides); more are
// mapped by Config.Communities or the operator API. A loopback deployment
// community also answers on localhost:<port> (an alias, as Buzz's
// community_host_aliases). The expected NIP-42 relay URL and NIP-98 u are
// built from the request's normalised Host. Archived and deleted
// communities answer like unmapped hosts (404).
//
// # Structure
//
// relay.go (server, routing, NIP-11), conn.go (one WebSocket: reader, one
// writer, the send queue, AUTH, REQ/COUNT/CLOSE), ingest.go (the EVENT path
// shared by WS and POST /events), channels.go (9007, 9000-9022), access.go
// (kind sets and read gates), subs.go (the live-subscription index and
// fan-out), bridge.go (NIP-98, /events, /query, /count), operator.go,
// ratelimit.go, faults.go, buzzv1.go, stats.go, verify.go. Events live in the store package
// (modules/relay/store), one Store per community.
//
// # Concurrency
//
// No lock spans a community on the hot path: the store locks per channel
// partition, each channel has its own RWMutex for membership, live
// subscriptions are indexed by channel under a RWMutex taken for reading by
// fan-out, and rate-limit buckets have their own mutex. Each connection has
// one writer goroutine draining a lazily grown queue; a live event is
// serialised once and shared by every delivery (the frame is the
// subscription's prefix, the event JSON and "]"). The writer frames
// messages itself and sends a batch in one write (writev from 16 KiB); it
// is the socket's only writer (pongs and close frames are queued to it),
// and gorilla/websocket is used for the upgrade and for reading. Each
// socket runs on its own goroutine after the upgrade, so net/http lets go
// of the request.
//
// # Decisions where docs/buzz-protocol.md is silent or unsure
//
//   - Channel access follows Buzz's check_channel_membership: open channels
//     can be read and written by anyone in the community, private ones by
//     members only. Writing to an unknown channel is "restricted: not a
//     channel member"; reading one is allowed and empty.
//     Config.RequireChannelMembership makes open channels writable by
//     members only, for scenarios that must join or add everyone.
//   - A subscription with several #h values gets fan-out for all of them
//     (newer relays), capped at Config.MaxChannelsPerREQ (128) distinct
//     values per REQ: CLOSED "restricted: too many explicit channels".
//   - Relay-signed 39000/39001/39002 (all three re-signed on every group
//     change, as emit_group_discovery_events) carry `d` and `h` = channel, so channel
//     subscriptions receive them live. A new version is dated after the
//     previous one (a same-second replacement would otherwise lose the
//     store's lowest-id tie-break), so bursts of membership changes can date
//     them a few seconds ahead.
//   - Membership notices 44100/44101 (relay-signed, h and p, p-gated) are
//     delivered to global subscriptions (`{"kinds":[44100,44101],"#p":[self]}`)
//     and to the channel's subscriptions.
//   - Kind 9000 may be sent by channel owners and admins only (a refusal
//     reads "restricted: only channel owners and admins can add members"),
//     with 1..100 p tags ("invalid: too many p tags (got N, limit 100)").
//   - Slow consumers: a live delivery is dropped when SendBuffer (1000)
//     frames already wait; SlowClientGrace (15) consecutive drops drop the
//     TCP connection (no close frame: it would queue behind the backlog).
//     Replies to the client's own requests (replays included) are never
//     dropped; past 4×SendBuffer + MaxFilters×MaxHistoricalLimit waiting
//     frames the connection is dropped the same way.
//   - The AUTH deadline closes with 1008 "auth-required: authentication
//     timed out". Beyond MaxConnections a new socket is closed at once.
//   - An oversized frame gets NOTICE "error: frame too large (N bytes, limit
//     M)" and a 1008 close; frames past 4×limit+1 MiB are cut by the
//     WebSocket layer (1009) without the NOTICE.
//   - Signature failures: "invalid: event id does not match its content",
//     "invalid: signature verification failed". Config.VerifySignatures=false
//     skips both (capacity runs only); NIP-42/NIP-98 are always verified.
//   - A NIP-OA tag on AUTH must verify (else "auth-required: verification
//     failed"); its created_at clauses are checked against the AUTH event,
//     its kind clauses are not (they restrict what the agent publishes). A
//     verified tag selects the agent tier and records the owner relation
//     used by observer frames. Over HTTP an invalid x-auth-tag is 401
//     "NIP-98: invalid x-auth-tag".
//   - Deletions: a kind-5 or 9005 target that does not exist is "invalid:
//     deletion target event not found"; deleting someone else's event needs
//     a channel owner/admin ("restricted: only the author or a channel admin
//     can delete this event"). Re-submitting a deleted event answers
//     "duplicate:".
//   - A replaceable/addressable event older than the stored version is
//     accepted as "duplicate: have a newer event" and not stored.
//   - Presence content must be online, away or offline. When the last
//     connection of a key closes its status becomes offline (read by /query
//     synthesis); no offline event is broadcast. Synthesis answers at most
//     1000 subjects per request.
//   - Observer frames (24200): p, agent and frame tags; content 132–87472
//     chars; agent→owner or owner→agent by the AUTH-materialised relation,
//     else "restricted: observer frames require an owner relation".
//   - Rate limits use fixed windows per (community, pubkey): "retry in Ns"
//     is the time to the window's end, at least 1 s. The frame bucket is
//     charged by EVENT, REQ and COUNT after AUTH, the message bucket by
//     non-ephemeral EVENTs before validation, the API bucket by every
//     bridge request after NIP-98. Config.LegacyRateLimitNotice reproduces
//     relay-v0.2.1: a throttled EVENT or COUNT gets a NOTICE and no OK/CLOSED.
//   - HTTP read refusals starting "restricted:" are 403, other refusals 400.
//     A duplicate reaction over /events is 200 {"accepted":false,...}.
//   - Operator API: created_at/archived_at are RFC 3339; an accepted
//     deletion walks the stages every 20 ms and purges the community's data
//     at postgres_purged; the host stays reserved for ever (provisioning it
//     again is 409). Archiving closes the community's sockets (4000
//     "community archived"). No operator listeners are configured, so
//     /operator/listener/pubkeys always answers 403 "actor not authorized:
//     not a configured operator listener".
//   - Fault injection is reachable only through Relay.Faults(); no route
//     exposes it.
package relay
