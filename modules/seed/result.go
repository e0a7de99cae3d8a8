package seed

import (
	"fmt"
	"net/http"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// Operation names Seed and Teardown record to the Sink. They are distinct
// from the run's own operations so a setup() seed does not count as load.
const (
	OpProvision    = "seed_provision"     // POST /operator/communities (create_only)
	OpList         = "seed_list"          // GET /operator/communities?owner_pubkey=
	OpChannel      = "seed_channel"       // kind-9007 through POST /events
	OpMembers      = "seed_members"       // kind-9000 through POST /events
	OpRelayMembers = "seed_relay_members" // NIP-43 kind-9030 through POST /events
	OpNIP11        = "seed_nip11"         // the NIP-11 read that tells whether relay membership is required
	OpState        = "seed_state"         // POST /query reads of what a rerun finds
	OpHistory      = "seed_history"       // history messages
	OpThread       = "seed_thread"        // thread roots and chain replies
	OpHot          = "seed_hot"           // the hot thread's root and replies
	OpArchive      = "teardown_archive"
	OpDelete       = "teardown_delete"
	OpOwnerList    = "teardown_list"
)

// Phase names reported through Options.Progress, in the order they run.
const (
	PhaseCommunities = "communities"
	PhaseChannels    = "channels"
	PhaseMembers     = "members"
	PhasePosts       = "posts"
	PhaseTeardown    = "teardown"
)

// Progress is how far a phase is: Done of Total units settled (communities,
// channels, members or posts; what already existed counts as done).
type Progress struct {
	Phase       string
	Done, Total int
}

// Options configure Seed. Only Operator is required, and only when the
// scenario has a community host template.
type Options struct {
	// Operator signs the operator API calls (provisioning, ownership
	// checks). The CLI loads it with Scenario.OperatorKey; against the
	// embedded relay it is the relay's operator.
	Operator *nostr.Keys
	// OperatorOrigin is the relay's RELAY_OPERATOR_API_ORIGIN; default
	// target.http_url's scheme://host.
	OperatorOrigin string
	// Sink receives every request's Result (nil drops them).
	Sink relayclient.Sink
	// Progress, when set, is called after every settled unit, never
	// concurrently with itself. It must be quick.
	Progress func(Progress)
	// Transport is the HTTP pool to use; nil: one for this call.
	Transport http.RoundTripper
	// Timeout bounds each request (default 30 s).
	Timeout time.Duration
	// MaxThrottleRetries is how often one request is resent after being
	// throttled (default 120, waiting the relay's retry-in each time).
	MaxThrottleRetries int
	// Retries is how often one request is resent after a transport error or
	// a 5xx answer (default 3).
	Retries int
	// Concurrency overrides shape.seed_concurrency (0: the scenario's).
	Concurrency int
	// Deadline bounds the whole seed (0: none); past it Seed fails with a
	// *DeadlineError that says whether the relay was throttling.
	Deadline time.Duration
	// ThrottleTimeout ends the seed with a *ThrottledError once the relay
	// has answered nothing but quota rejections for this long (0: 5
	// minutes; negative: never).
	ThrottleTimeout time.Duration
}

// Counts count one phase's units. Planned = Created + Existing + Refused +
// Skipped once the phase ran to its end.
type Counts struct {
	Planned  int `json:"planned"`
	Created  int `json:"created"`  // created, added or posted by this run
	Existing int `json:"existing"` // found already there (a rerun)
	Refused  int `json:"refused"`  // refused by the relay (see Refusals)
	Skipped  int `json:"skipped"`  // not attempted: an earlier step failed
}

// Settled is Created + Existing: the units that are on the relay.
func (c Counts) Settled() int { return c.Created + c.Existing }

// Community is one community's provisioning outcome.
type Community struct {
	Index       int    `json:"index"`
	Host        string `json:"host,omitempty"` // "" without a host template
	CommunityID string `json:"community_id,omitempty"`
	Owner       string `json:"owner_pubkey"`
	// Status is "created", "existed" (owned by this run's fixture owner),
	// "unmanaged" (no host template: the URLs' own community) or "failed".
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Refusal is one planned unit the relay refused (or that was not sent
// because its thread parent was refused).
type Refusal struct {
	Phase     string `json:"phase"` // communities, channels, members, posts
	Community int    `json:"community"`
	Channel   int    `json:"channel"` // -1 for a community
	ChannelID string `json:"channel_id,omitempty"`
	// What names the unit: "host c0.example.com", "channel-3",
	// "member human 7", "history 12", "thread 1 reply 4", "hot reply 9".
	What   string `json:"what"`
	Pubkey string `json:"pubkey,omitempty"` // the member or the post's author
	Reason string `json:"reason"`
}

func (r Refusal) String() string {
	where := fmt.Sprintf("community %d", r.Community)
	if r.Channel >= 0 {
		where = fmt.Sprintf("channel %d/%d", r.Community, r.Channel)
	}
	s := r.What + " in " + where
	if r.Pubkey != "" {
		s += " (pubkey " + r.Pubkey + ")"
	}
	return s + ": " + r.Reason
}

// maxRefusals bounds Result.Refusals; the counts stay exact.
const maxRefusals = 1000

// Result is what Seed did. It is plain data (JSON-ready): the extension
// can hand it to a script as setup() data.
type Result struct {
	RunID       string      `json:"run_id"`
	Communities []Community `json:"communities"`
	Channels    Counts      `json:"channels"`
	Members     Counts      `json:"members"`
	// MemberEvents is the number of kind-9000 events the relay accepted.
	MemberEvents int `json:"member_events"`
	// MemberTagsApplied is what the read-back of the member lists found a
	// kind-9000 naming several members to do: MemberTagsFirst (Buzz: the
	// first p only) or MemberTagsEvery; "" when no event named several.
	MemberTagsApplied string `json:"member_tags_applied,omitempty"`
	// RelayMembershipRequired: the relay's NIP-11 lists NIP 43, so the run's
	// identities were made relay members (RelayMembers, kind 9030).
	RelayMembershipRequired bool   `json:"relay_membership_required,omitempty"`
	RelayMembers            Counts `json:"relay_members"`
	Posts                   Counts `json:"posts"`
	// Refusals lists refused units, at most 1000 (RefusalsOmitted more).
	Refusals        []Refusal `json:"refusals"`
	RefusalsOmitted int       `json:"refusals_omitted,omitempty"`
	// Error is why the seed failed ("" on success).
	Error string `json:"error,omitempty"`
	// Success is OK() when Seed returned: the exit status as data.
	Success  bool          `json:"ok"`
	Duration time.Duration `json:"duration_ns"`
}

// What a relay does with a kind-9000 naming several members.
const (
	MemberTagsFirst = "first p only"
	MemberTagsEvery = "every p"
)

// OK reports whether the seed succeeded: no error, every community and
// channel in place, every member present and every planned post accepted.
func (r *Result) OK() bool {
	return r.Error == "" && r.Channels.Settled() == r.Channels.Planned &&
		r.Members.Settled() == r.Members.Planned && r.Posts.Settled() == r.Posts.Planned
}

// TeardownOptions configure Teardown. Operator is required.
type TeardownOptions struct {
	Operator       *nostr.Keys
	OperatorOrigin string
	Sink           relayclient.Sink
	Progress       func(Progress)
	Transport      http.RoundTripper
	Timeout        time.Duration
	Retries        int
	Concurrency    int
}

// Teardown stages besides the relay's own deletion stages.
const (
	StageAbsent = "absent" // the fixture owner holds no such host and no request of ours exists
	StageFailed = "failed"
)

// TeardownHost is one host's teardown outcome.
type TeardownHost struct {
	Community   int    `json:"community"`
	Host        string `json:"host"`
	RequestID   string `json:"request_id"`
	CommunityID string `json:"community_id,omitempty"`
	// Archived is true when this call archived (or re-archived) the host.
	Archived bool `json:"archived"`
	// Stage is the relay's deletion stage ("submitted" on first acceptance,
	// later stages on a replay), "absent" or "failed".
	Stage string `json:"stage"`
	Error string `json:"error,omitempty"`
}

// TeardownResult is what Teardown did, host by host in community order.
type TeardownResult struct {
	RunID string         `json:"run_id"`
	Hosts []TeardownHost `json:"hosts"`
	// Success is true when Teardown returned with no host failed.
	Success  bool          `json:"ok"`
	Duration time.Duration `json:"duration_ns"`
}

// Failed is the number of hosts whose teardown failed.
func (r *TeardownResult) Failed() int {
	n := 0
	for _, h := range r.Hosts {
		if h.Stage == StageFailed {
			n++
		}
	}
	return n
}

// ByStage counts hosts per stage.
func (r *TeardownResult) ByStage() map[string]int {
	m := map[string]int{}
	for _, h := range r.Hosts {
		m[h.Stage]++
	}
	return m
}
