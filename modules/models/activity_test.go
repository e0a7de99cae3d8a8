package models

import (
	"context"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// A thread reply waits for the socket lookup of its channel's seeded
// roots; when the stop cuts that lookup short the reply is not published
// (neither as a reply nor top-level). The relay withholds the lookup's
// EOSE. Mutant "publish the reply top-level when the lookup was cut"
// publishes a message and fails.
func TestAReplyWhoseRootLookupTheStopCutsShortIsNotPublished(t *testing.T) {
	r, sc, conn := activityOn(t, scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 3600, MessagesPerHour: 360000, ThreadReplyFraction: 1}, nil)
	keys := sc.Keys(0)
	r.Faults().WithholdEOSE("") // the root lookup never completes
	act := NewActivity(sc, 0, keys, NewRand(sc.RunID, 0), relayclient.NopSink{})
	// ops, which bounds the lookups, ends first here, so replies keep
	// coming due after their lookups are cut.
	ops, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer stop()
	halt, unhalt := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer unhalt()
	act.Run(halt, ops, conn)
	act.Settle(context.Background())
	r.Faults().Reset()
	evs, _, _ := conn.SubscribeEOSE(context.Background(), []relayclient.Filter{{Kinds: []int{nostr.KindStreamMessage}, Authors: []string{keys.PubKey()}}}, relayclient.SubOptions{})
	if n := evs.Replayed(); n != 0 {
		t.Errorf("%d messages of the human on the relay, want none", n)
	}
}
