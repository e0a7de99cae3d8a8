// Package desktop models the Buzz desktop app's relay traffic, in the two
// modes of buzz-loadgen's desktop clients: legacy (the app before its
// request-volume fixes) and current (after them).
//
// The decisions are a state machine, Model: Step takes an Event (connected,
// an EOSE with its arrival time and replay count, a missed deadline, a read
// that settled, the passage of time, a session end, a stop) and returns the
// Actions it causes (connect, open or close a subscription, start a read).
// It reads no clock and opens no socket. The wire shapes of every request
// are pure builders (SubFilters, FixedRequests, the window and roster
// pagers, the thread filters), and Client is the thin driver that runs a
// Model against a relay through modules/relayclient, reporting each request as
// its own desktop_* op. Human is a scenario's desktop human: a Client plus
// modules/models's Activity (presence, typing, messages, reactions, session
// end) on each session's socket.
//
// Starting desktop human g of a scenario (the runner or the extension):
//
//	h, err := desktop.NewHuman(desktop.HumanConfig{Scenario: sc, Global: g, Sink: sink,
//		Transport: pool, BeforeConnect: connectLimiter})
//	...
//	end := h.Session(stop, grace) // one call spans every connection; returns when stop ends
//	// end.Unexpected() as for modules/models: EndCancelled when the grace ran out
//
// (h.Run(stop, grace) is the same with an error.) ConfigFor gives the
// Client's Config for the same index when only the desktop traffic is
// wanted: desktop.New(cfg), then Client.Run(stop, grace).
//
// Rules the model follows (buzz-LOADGEN.md "Desktop clients", the desktop
// PR, desktop-requests.md), with the decisions taken where they leave room:
//
//   - Routes: profiles and membership (globals), presence (live-only, only
//     with a co-member; establishes nothing) and channel routes: one
//     replaying batch per 10 channels (legacy, or current with ≤ 10), or
//     for current with more than 10 a live-only subscription per
//     desktop.live_only_scope channels (default 128, the app's 2048: see
//     Wire shapes) plus replays of 10 closed at EOSE. The live-only channel
//     subscription is always cut and establishes nothing itself: the
//     replays recover their channels' windows and threads, so a cold start
//     reads each window once.
//   - At most 4 REQs await EOSE at once (the silence probe excepted). The
//     EOSE deadline is the relay client's (EOSETimeout): a withheld EOSE
//     fails there, and one that arrived after it is a timeout. A route that misses it is cut and recovered at once; its
//     REQ stays open as a live route (a replay is closed), and it is not
//     caught up, so the next connection cannot resume or carry it.
//   - current establishes each route at its EOSE by its replay outcome (cut:
//     500 replayed, a missed deadline, the live-only batch, or not caught up
//     by the previous connection). legacy makes every read at connect.
//   - A current renewal holds continuous routes back; the first cut
//     establishes all held routes as on a reconnect, and every later route
//     as it arrives. It reads no NIP-11. A legacy renewal is an ordinary
//     reconnect. Every reconnect reads NIP-11; channel names and sidebar
//     preferences are read once, on the first successful connection (a
//     failed first attempt does not skip them).
//   - Ticks run on the client's clock from its start, across connections;
//     a tick while disconnected does nothing. current's replacement
//     backstop runs from the route's last successful replacement (the
//     first connection starts it), not from every connect, as the PR
//     measures it. A tick that is due
//     for a full unread repair while a covered one runs cannot add it: the
//     snapshot is then owed.
//   - A full unread repair is one read: the read-state snapshot, then the
//     unread chunks (the app runs the repair after the read-state read).
//     Its outcome reports the snapshot and the repair apart.
//   - Backoff after a failed connect or session: 500 ms doubling to 30 s;
//     a session that lasted 60 s, or that our side ended (a renewal, the
//     human's session end), restarts it from 500 ms. A desktop human
//     draws each delay from the upper half of that (its own seeded stream),
//     so clients dropped together do not reconnect together.
//
// Wire shapes (desktop-requests.md; "proposed" there, decided here):
//
//   - current's live-only channel subscription is one filter with every
//     channel of its scope in #h (limit 0); its replays have the legacy
//     batch shape. The app's scope is 2048 channels per REQ, but Buzz (and
//     the embedded relay) refuse more than 128 explicit #h values in one
//     REQ ("restricted: too many explicit channels"). So the scope is the
//     scenario's desktop.live_only_scope, default 128, which runs against
//     real Buzz: a member in 300 channels opens 3 live-only REQs instead of
//     the app's one. 2048 reproduces the app literally, for a relay without
//     the cap. Below 129 channels per member both give the same plan.
//   - desktop_notices is [{"kinds":[40099],"#h":[C],"limit":20}] per window.
//   - desktop_probe is [{"kinds":[44100,44101],"#p":[V],"since":NOW,"limit":0}],
//     closed at its EOSE; any frame within 10 s answers it.
//   - desktop_read_state asks for the snapshot object
//     ([{"kinds":[30078],"authors":[V],"read_state_snapshot":1}]) when the
//     last NIP-11 read advertised read_state_snapshot version 1 with a
//     community_id, as the app does (and checks the reply's community_id
//     against it); otherwise the app's plain bounded read
//     [{"kinds":[30078],"authors":[V],"#t":["read-state"],"limit":500}].
//   - desktop_thread_root is the app's [{"ids":[root],"#h":[C],"limit":1}],
//     made by every thread read (docs/desktop-requests.md §5.13). Before
//     the first one in a channel the generator finds the seeded roots with
//     its own search, reported as http_query and cached: with
//     Config.RootMarker (every scenario desktop human) a NIP-50 search for
//     the marker word (limit 50, scenario.MarkedRoots), thread t reading
//     one of them in turn; without it the channel's top-level head with
//     summaries (limit 50), taking the row with the most replies. Without a
//     root the thread page is not read.
//   - EOSEs are judged by arrival: a REQ's wait ends at EOSETimeout unless
//     the reader is behind, when it goes on (up to one more timeout) for
//     frames that arrived in time but were not yet read
//     (relayclient.SubOptions.EOSEGrace); an EOSE that arrived after the
//     timeout is a timeout. Presence is reported as desktop_presence_eose.
//     Deliberate deviations: docs/desktop-requests.md §8. Each kept-open channel route counts its
//     replacement backstop from its own last replacement.
//   - Window bounds are checked for the relay's pubkey (NIP-11 self), not
//     its signature: one Schnorr verification per page is load on the
//     generator, not on the relay.
package desktop
