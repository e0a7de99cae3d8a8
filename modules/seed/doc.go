// Package seed provisions a scenario's data shape on a relay (Seed) and
// removes the communities it provisioned (Teardown), following buzz-loadgen's
// rules (docs/scenario.md, the LOADGEN seed and teardown sections).
//
// Seed runs in phases, each finished before the next starts, so the relay
// sees every kind-9007 before any kind-9000 and every kind-9000 before any
// post:
//
//  1. communities: with a host template, each community is provisioned
//     through POST /operator/communities with create_only, owned by its
//     fixture owner (Scenario.OwnerKeys). When the host already exists it is
//     reused only if that fixture owner owns it (GET /operator/communities);
//     otherwise the seed fails naming the host. Without a template every
//     community is the URLs' own (deployment) community and nothing is
//     provisioned.
//  2. channels: one kind-9007 per channel signed by the community owner,
//     named Scenario.ChannelName, with visibility private or open.
//  3. members (private channels only): the channel's members at the largest
//     ramp step (Scenario.ChannelMemberList: humans, agents and, in the hot
//     thread's channel, the hot-thread authors, among them the root's author)
//     are added by kind-9000 events of at most 100 p tags, seed_concurrency at
//     a time, signed by the community owner. A member the relay refuses fails
//     the seed and no post is made.
//  4. posts: the hot thread's root first, then concurrently every channel's
//     history_messages_per_channel messages, its thread_roots_per_channel
//     thread chains (reply k replies to reply k-1 with NIP-10 marked e tags;
//     each chain is sequential, chains run in parallel) and the hot thread's
//     seed_replies first-level replies. Each post is by a channel member
//     picked by a hash of its content (so a slot keeps its author whatever
//     else the shape says, and a rerun finds it), by the community owner in
//     a channel without members, and the hot thread's by the hot-thread
//     authors round robin.
//
// Reruns. A rerun checks the relay's state instead of relying on event ids
// (a fixed created_at would be refused outside the relay's ±900 s window):
// a 9007 answered "duplicate: channel already exists" counts as existing;
// before adding members the channel's relay-signed member list (kind 39002)
// is read and only the missing members are added; before posting, the
// channel's kind-9 events by the slots' authors are read (paged with
// until/before_id) and a slot whose deterministic content (for example
// "history 3 of channel 0/2") is already there by its author is not posted
// again. A thread chain resumes after its last existing reply. So a rerun
// adds nobody new and posts nothing twice; its cost grows with what those
// authors have posted into the channel since.
//
// Seeded thread roots carry the run's root marker word and the hot root the
// hot marker word (the clients find them with a NIP-50 search); the contents
// are scenario.ThreadRootContent and scenario.HotRootContent.
//
// Every request goes over HTTP (operator API, POST /events, POST /query),
// NIP-98 signed by its author (agents also send their NIP-OA tag), and is
// recorded to Options.Sink under the Op* names below. A throttled request
// (HTTP 429, "rate-limited: quota exceeded") waits for the relay's retry-in
// and is sent again, re-signed with a fresh created_at; transport errors and
// 5xx answers are retried a few times; a 4xx or accepted:false answer is the
// relay's refusal and is final. A relay that answers nothing but quota
// rejections for Options.ThrottleTimeout (default 5 minutes) ends the seed
// with a *ThrottledError; Options.Deadline bounds the whole seed. A seed
// stopped by its deadline or by the caller (the run's setup timeout, a
// signal) while the relay was throttling it says so in its error.
//
// Teardown archives each host of the template as its fixture owner and then
// requests owner deletion with a request id derived from run_id and the host,
// so reruns replay the same request and report the current stage. A host its
// fixture owner does not hold (GET /operator/communities) is never archived;
// the deletion request is still replayed for it, which the relay answers with
// the stage of our earlier request or community_not_found (reported absent),
// never touching another owner's community.
package seed
