package audit

import (
	"testing"
	"time"
	"unsafe"

	"github.com/buzzload/buzzload/modules/nostr"
)

// A record keeps nothing of its event alive: its id is its own string, not
// a slice of the one the signature shares (which pinned 192 bytes per
// acknowledged event for the whole run: the 2½-hour soak's growth,
// docs/benchmarks.md), and one channel is one string. Fails without the
// copy: the record's id points into the event's.
func TestAckLogPinsNothingOfTheEvent(t *testing.T) {
	k := nostr.DeriveKeys("audit-test", nostr.RoleHuman, 1)
	log := NewAckLog(10)
	var evs []*nostr.Event
	for i := range 2 {
		ev, err := k.NewEvent(9, [][]string{{"h", "0f0e0d0c-0000-4000-8000-000000000001"}}, "hello", time.Now().Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
		log.Add(ev)
	}
	_, recs := log.snapshot()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.id != evs[i].ID || r.author != evs[i].PubKey {
			t.Errorf("record %d reads back as %s by %s", i, r.id, r.author)
		}
	}
	if unsafe.StringData(log.recs[0].channel) != unsafe.StringData(log.recs[1].channel) {
		t.Error("one channel, two strings")
	}
}
