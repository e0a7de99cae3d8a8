// Package desktop models the Buzz desktop app's relay traffic, in the two
// modes of buzz-loadgen's desktop clients: legacy (the app before its
// request-volume fixes) and current (after them).
//
// The decisions are a state machine, Model: Step takes an Event (connected,
// an EOSE with its arrival time and replay count, a missed deadline, a read
// that settled, the passage of time, a session end, a stop) and returns the
// Actions it causes (connect, open or close a subscription, start a read).
// It reads no clock and opens no socket. The wire shapes of every request
// are pure builders (SubFilters, ReadRequests, the window and roster
// pagers), and Client is the thin driver that runs a Model against a relay
// through modules/relay, reporting each request as its own desktop_* op.
//
// Rules the model follows (buzz-LOADGEN.md "Desktop clients", the desktop
// PR, desktop-requests.md), with the decisions taken where they leave room:
//
//   - Routes: profiles and membership (globals), presence (live-only, only
//     with a co-member; establishes nothing) and channel routes: one
//     replaying batch per 10 channels (legacy, or current with ≤ 10), or
//     for current with more than 10 a live-only subscription per 2048
//     channels plus replays of 10 closed at EOSE. The live-only channel
//     subscription is always cut and establishes nothing itself: the
//     replays recover their channels' windows and threads, so a cold start
//     reads each window once.
//   - At most 4 REQs await EOSE at once (the silence probe excepted). The
//     EOSE deadline is the relay client's: an EOSE that arrived after it is
//     a timeout. A route that misses it is cut and recovered at once; its
//     REQ stays open as a live route (a replay is closed), and it is not
//     caught up, so the next connection cannot resume or carry it.
//   - current establishes each route at its EOSE by its replay outcome (cut:
//     500 replayed, a missed deadline, the live-only batch, or not caught up
//     by the previous connection). legacy makes every read at connect.
//   - A current renewal holds continuous routes back; the first cut
//     establishes all held routes as on a reconnect, and every later route
//     as it arrives. It reads no NIP-11. A legacy renewal is an ordinary
//     reconnect. Every reconnect reads NIP-11, and no reconnect rereads
//     channel names or sidebar preferences.
//   - Ticks run on the client's clock from its start, across connections;
//     a tick while disconnected does nothing. current's replacement
//     backstop runs from the last successful replacement or the last
//     connect (a connect opens fresh subscriptions). A tick that is due
//     for a full unread repair while a covered one runs cannot add it: the
//     snapshot is then owed.
//   - A full unread repair is one read: the read-state snapshot, then the
//     unread chunks (the app runs the repair after the read-state read).
//     Its outcome reports the snapshot and the repair apart.
//   - Backoff after a failed connect or session: 500 ms doubling to 30 s;
//     a session that lasted 60 s restarts it from 500 ms.
package desktop
