package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

// benchEvents builds n events over 10 channels (half in chans[0]), 1000
// authors, 20 per second, every 10th a reply to a recent message of its
// channel. Tags slices of top-level messages are shared: the store never
// writes to events.
func benchEvents(n int) ([]*nostr.Event, []string) {
	chans := make([]string, 10)
	for i := range chans {
		chans[i] = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	}
	htags := make([][][]string, len(chans))
	for i, c := range chans {
		htags[i] = [][]string{{"h", c}}
	}
	authors := make([]string, 1000)
	for i := range authors {
		authors[i] = fmt.Sprintf("%060x%04x", 0xbeef, i)
	}
	lastTop := make([]string, len(chans))
	evs := make([]*nostr.Event, n)
	for i := range evs {
		ci := i % 18
		if ci >= 10 {
			ci = 0 // half of everything lands in the hot channel
		}
		e := &nostr.Event{ID: fmt.Sprintf("%064x", uint64(i)*0x9E3779B97F4A7C15), PubKey: authors[i%1000],
			CreatedAt: 1_700_000_000 + int64(i/20), Kind: 9, Tags: htags[ci], Content: "hello"}
		if i%10 == 9 && lastTop[ci] != "" {
			e.Tags = [][]string{{"h", chans[ci]}, {"e", lastTop[ci], "", "reply"}}
		} else {
			lastTop[ci] = e.ID
		}
		evs[i] = e
	}
	return evs, chans
}

var big = sync.OnceValues(func() (*Store, []string) {
	evs, chans := benchEvents(1_000_000)
	s := New(Config{})
	for _, e := range evs {
		s.Add(e)
	}
	return s, chans
})

var benchKeys = sync.OnceValue(func() *nostr.Keys { return nostr.DeriveKeys("store-bench", nostr.RoleOperator, 0) })

func BenchmarkAdd(b *testing.B) {
	evs, _ := benchEvents(200_000)
	b.ReportAllocs()
	b.ResetTimer()
	var s *Store
	for i := 0; i < b.N; i++ {
		if i%len(evs) == 0 {
			b.StopTimer()
			s = New(Config{})
			b.StartTimer()
		}
		s.Add(evs[i%len(evs)])
	}
}

func BenchmarkAddParallel(b *testing.B) {
	evs, _ := benchEvents(2_000_000)
	s := New(Config{})
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Add(evs[int(next.Add(1)-1)%len(evs)])
		}
	})
}

// BenchmarkChannelWindow reads a channel window of 50 rows from a store of
// 1,000,000 events (500,000 in the channel), at the head and 100,000 rows
// deep, with aux and summaries (signatures reused while unchanged).
func BenchmarkChannelWindow(b *testing.B) {
	s, chans := big()
	keys := benchKeys()
	deep := s.Query([]Filter{{Tags: map[string][]string{"h": {chans[0]}}, Limit: ptr(1)}}, Reader{})[0]
	deepAt := deep.CreatedAt - 5000
	for _, c := range []struct {
		name string
		js   string
	}{
		{"head", `{"top_level":true,"#h":["` + chans[0] + `"],"kinds":[9,40002],"limit":50}`},
		{"head+aux+summaries", `{"top_level":true,"#h":["` + chans[0] + `"],"kinds":[9,40002],"limit":50,"include_aux":true,"include_summaries":true}`},
		{"deep cursor", fmt.Sprintf(`{"top_level":true,"#h":[%q],"kinds":[9,40002],"limit":50,"until":%d,"before_id":%q}`, chans[0], deepAt, hexID(0))},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := filter(b, c.js)
			rd := Reader{Signer: keys}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w, err := s.ChannelWindow(f, rd)
				if err != nil || len(w.Rows) != 50 {
					b.Fatalf("%d rows, %v", len(w.Rows), err)
				}
			}
		})
	}
}

// BenchmarkQueryByAuthor: one author's newest 500 events across all
// channels of the 1,000,000-event store.
func BenchmarkQueryByAuthor(b *testing.B) {
	s, _ := big()
	f := filter(b, `{"authors":["`+fmt.Sprintf("%060x%04x", 0xbeef, 7)+`"],"limit":500}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := s.Query([]Filter{f}, Reader{}); len(got) != 500 {
			b.Fatalf("%d events", len(got))
		}
	}
}

// BenchmarkChannelReplay: the desktop's per-channel REQ replay (15 kinds,
// since, limit 500) on the hot channel.
func BenchmarkChannelReplay(b *testing.B) {
	s, chans := big()
	f := filter(b, `{"kinds":[9,40002,40008,45001,45003,40099,40100,40003,5,9005,7,39000,39002,39005,20002],"#h":["`+chans[0]+`"],"since":1700040000,"limit":500}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if got := s.Query([]Filter{f}, Reader{}); len(got) != 500 {
			b.Fatalf("%d events", len(got))
		}
	}
}

// BenchmarkThreadWindow pages 50 replies of a hot thread of 100,000
// replies, at the head and 50,000 replies deep.
func BenchmarkThreadWindow(b *testing.B) {
	s := New(Config{})
	s.Add(ev(1, 1, 1000, 9, h(chA)))
	for i := 0; i < 100_000; i++ {
		s.Add(ev(10+i, i%50, 1001+i/10, 9, h(chA), replyTo(1)))
	}
	rd := Reader{Signer: benchKeys(), Pubkey: pk(1), Host: "acme.localhost"}
	for _, c := range []struct{ name, cursor string }{
		{"head", ""},
		{"deep", fmt.Sprintf(`,"until":%d,"before_id":%q`, 1001+5000, hexID(0))},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := filter(b, `{"thread_window":true,"#h":["`+chA+`"],"#e":["`+hexID(1)+`"],"kinds":[9],"limit":50,"include_aux":true`+c.cursor+`}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if w, err := s.ThreadWindow(f, rd); err != nil || len(w.Rows) != 50 {
					b.Fatalf("%d rows, %v", len(w.Rows), err)
				}
			}
		})
	}
}
