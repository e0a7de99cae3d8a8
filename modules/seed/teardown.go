package seed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ErrNoHostTemplate is returned by Teardown for a scenario without
// target.community_host_template: seed provisioned nothing it could remove.
var ErrNoHostTemplate = errors.New("the scenario has no target.community_host_template, so seed provisioned no community " +
	"and there is nothing teardown may remove")

// DeletionRequestID is the request id teardown uses for host: a UUIDv8 from
// SHA-256("buzzload/v1\x00teardown\x00" ‖ run_id ‖ "\x00" ‖ host), so every
// rerun replays the same request.
func DeletionRequestID(runID, host string) string {
	d := sha256.Sum256([]byte("buzzload/v1\x00teardown\x00" + runID + "\x00" + host))
	d[6] = d[6]&0x0f | 0x80
	d[8] = d[8]&0x3f | 0x80
	h := hex.EncodeToString(d[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Teardown archives every community of sc's host template as its fixture
// owner and requests its owner deletion (see the package doc). It never
// archives a host the fixture owner does not hold. The result lists every
// host by stage; the error is non-nil when teardown could not start or any
// host failed.
func Teardown(ctx context.Context, sc *scenario.Scenario, opt TeardownOptions) (*TeardownResult, error) {
	start := time.Now()
	switch {
	case sc == nil:
		return nil, errors.New("teardown: no scenario")
	case sc.Embedded():
		return nil, fmt.Errorf("teardown: %w", ErrEmbedded)
	case sc.Target.CommunityHostTemplate == "":
		return nil, fmt.Errorf("teardown: %w", ErrNoHostTemplate)
	case opt.Operator == nil:
		return nil, errors.New("teardown: an operator key is needed")
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("teardown: %w", err)
	}
	conc := opt.Concurrency
	if conc <= 0 {
		conc = sc.Shape.SeedConcurrency
	}
	n, err := newRPC(sc, opt.Sink, opt.Transport, opt.Timeout, 0, opt.Retries, conc)
	if err != nil {
		return nil, fmt.Errorf("teardown: %w", err)
	}
	defer n.close()
	op, err := n.operator(opt.Operator, opt.OperatorOrigin)
	if err != nil {
		return nil, fmt.Errorf("teardown: %w", err)
	}
	hosts := sc.CommunityHosts()
	res := &TeardownResult{RunID: sc.RunID, Hosts: make([]TeardownHost, len(hosts))}
	track := &tracker{fn: opt.Progress}
	track.start(PhaseTeardown, len(hosts))
	forEach(ctx, len(hosts), conc, func(ctx context.Context, i int) {
		res.Hosts[i] = teardownHost(ctx, n, op, sc, i, hosts[i])
		track.add(1)
	})
	res.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		for i := range res.Hosts {
			if res.Hosts[i].Stage == "" {
				res.Hosts[i] = TeardownHost{Community: i, Host: nostr.NormalizeHost(hosts[i]),
					RequestID: DeletionRequestID(sc.RunID, nostr.NormalizeHost(hosts[i])), Stage: StageFailed, Error: "not attempted: " + err.Error()}
			}
		}
		return res, fmt.Errorf("teardown: %w", err)
	}
	if f := res.Failed(); f > 0 {
		first := ""
		for _, h := range res.Hosts {
			if h.Stage == StageFailed {
				first = h.Host + ": " + h.Error
				break
			}
		}
		return res, fmt.Errorf("teardown: %d of %d communities failed: %s", f, len(hosts), first)
	}
	res.Success = true
	return res, nil
}

// teardownHost archives and deletes one host. The deletion request is sent
// even when the host is not listed for its owner (already deleted hosts are
// not listed): the relay answers a replayed request id with its stage and
// refuses anything else as community_not_found, which is "absent".
func teardownHost(ctx context.Context, n *rpc, op *relayclient.HTTP, sc *scenario.Scenario, i int, host string) TeardownHost {
	host = nostr.NormalizeHost(host) // the delete route wants the exact canonical spelling
	owner := sc.OwnerKeys(i).PubKey()
	th := TeardownHost{Community: i, Host: host, RequestID: DeletionRequestID(sc.RunID, host), Stage: StageFailed}
	cancelled := func(err error) TeardownHost {
		th.Stage, th.Error = StageFailed, "cut short: "+err.Error()
		return th
	}
	var list relayclient.CommunityList
	lr, err := n.call(ctx, func() relayclient.Result {
		var r relayclient.Result
		list, r = op.ListCommunities(ctx, owner, relayclient.CallOptions{Op: OpOwnerList, Timeout: n.timeout})
		return r
	})
	if err != nil {
		return cancelled(err)
	}
	if lr.Outcome != relayclient.OutcomeOK {
		th.Error = "listing the fixture owner's communities: " + reason(lr)
		return th
	}
	held := false
	for _, c := range list.Communities {
		if nostr.NormalizeHost(c.Host) == host {
			held, th.CommunityID = true, c.CommunityID
		}
	}
	archiveErr := ""
	if held {
		ar, err := n.call(ctx, func() relayclient.Result {
			_, r := op.ArchiveCommunity(ctx, host, owner, relayclient.CallOptions{Op: OpArchive, Timeout: n.timeout})
			return r
		})
		if err != nil {
			return cancelled(err)
		}
		if ar.Outcome == relayclient.OutcomeOK {
			th.Archived = true
		} else {
			archiveErr = "archive: " + reason(ar)
		}
	}
	var rep relayclient.DeletionReply
	dr, err := n.call(ctx, func() relayclient.Result {
		var r relayclient.Result
		rep, r = op.DeleteCommunity(ctx, relayclient.DeletionRequest{Host: host, CommunityID: th.CommunityID, OwnerPubkey: owner,
			RequestID: th.RequestID, AcknowledgementVersion: 1}, relayclient.CallOptions{Op: OpDelete, Timeout: n.timeout})
		return r
	})
	if err != nil {
		return cancelled(err)
	}
	switch {
	case dr.Outcome == relayclient.OutcomeOK:
		th.Stage, th.Error = rep.Status, archiveErr
		if rep.CommunityID != "" {
			th.CommunityID = rep.CommunityID
		}
	case !held && notFound(dr):
		th.Stage = StageAbsent
	default:
		th.Error = "deletion request: " + reason(dr)
		if archiveErr != "" {
			th.Error = archiveErr + "; " + th.Error
		}
	}
	return th
}

// notFound reports a deletion answered community_not_found (404).
func notFound(r relayclient.Result) bool {
	return refused(r) && (strings.Contains(r.Error, "community_not_found") || strings.Contains(r.Error, "HTTP 404"))
}
