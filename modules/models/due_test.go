package models

import (
	"context"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relayclient/relayclienttest"
	"github.com/buzzload/buzzload/modules/scenario"
)

// Issue 14 (coordinated omission): every publish of the schedule records
// when it was due. A thread reply waits for its root lookup, which the
// relay slows by 150 ms; the messages due meanwhile are sent late, so their
// lag (Start−Due) shows the wait the send-time latency hides, and the
// latency from the due time is never below the send's.
func TestScheduledPublishesRecordWhenTheyWereDue(t *testing.T) {
	sink := &relayclienttest.CollectSink{}
	r, sc, conn := activityOn(t, scenario.Human{HistoryLimit: 5, PresenceIntervalSecs: 3600, MessagesPerHour: 180000, ThreadReplyFraction: 1}, sink)
	keys := sc.Keys(0)
	r.Faults().DelayEOSE("", 150*time.Millisecond)
	act := NewActivity(sc, 0, keys, NewRand(sc.RunID, 0), sink)
	halt, unhalt := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer unhalt()
	act.Run(halt, context.Background(), conn)
	act.Settle(context.Background())
	pubs := sink.Op(relayclient.OpPublish)
	if len(pubs) < 3 {
		t.Fatalf("%d publishes", len(pubs))
	}
	late := 0
	for _, p := range pubs {
		if p.Due.IsZero() {
			t.Fatalf("a scheduled publish without its due time: %+v", p)
		}
		if p.Start.Before(p.Due) {
			t.Errorf("sent %v before it was due", p.Due.Sub(p.Start))
		}
		if p.Start.Sub(p.Due) >= 100*time.Millisecond {
			late++
		}
	}
	if late == 0 {
		t.Errorf("no publish was sent 100 ms late behind a 150 ms lookup (%d publishes)", len(pubs))
	}
}
