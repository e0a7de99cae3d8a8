package store

import (
	"slices"
	"testing"

	"github.com/buzzload/buzzload/modules/nostr"
)

func TestAddStatuses(t *testing.T) {
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
	cases := []struct {
		name string
		e    *nostr.Event
		want Status
	}{
		{"same id again is a duplicate", ev(1, 1, 100, 9, h(chA)), Duplicate},
		{"ephemeral typing is never stored", ev(2, 1, 100, nostr.KindTyping, h(chA)), Ephemeral},
		{"ephemeral presence is never stored", ev(3, 1, 100, nostr.KindPresence), Ephemeral},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.Add(c.e); got.Status != c.want {
				t.Fatalf("Add = %v, want %v", got.Status, c.want)
			}
		})
	}
	if _, ok := s.Get(hexID(2)); ok || s.Len() != 1 {
		t.Fatalf("ephemeral event was stored (Len %d)", s.Len())
	}
	if r := s.Add(ev(4, 1, 100, nostr.KindTyping, h(chA))); r.Channel != chA {
		t.Fatalf("ephemeral result lacks its channel for fan-out: %q", r.Channel)
	}
}

func TestReplaceableAndAddressableKeepTheNewest(t *testing.T) {
	type step struct {
		e    *nostr.Event
		want Status
	}
	d := func(v string) []string { return []string{"d", v} }
	cases := []struct {
		name    string
		steps   []step
		current []int // ids a query of the coordinate's kind returns
	}{
		{"newer profile replaces older", []step{
			{ev(10, 1, 100, 0), Stored}, {ev(11, 1, 200, 0), Stored}}, []int{11}},
		{"older profile is superseded", []step{
			{ev(11, 1, 200, 0), Stored}, {ev(10, 1, 100, 0), Superseded}}, []int{11}},
		{"same second keeps the lowest id", []step{
			{ev(21, 1, 100, 3), Stored}, {ev(20, 1, 100, 3), Stored}, {ev(22, 1, 100, 3), Superseded}}, []int{20}},
		{"10000-19999 are replaceable per author", []step{
			{ev(30, 1, 100, 10030), Stored}, {ev(31, 2, 100, 10030), Stored}, {ev(32, 1, 101, 10030), Stored}}, []int{32, 31}},
		{"addressable keys on d", []step{
			{ev(40, 1, 100, 30078, d("a")), Stored}, {ev(41, 1, 100, 30078, d("b")), Stored},
			{ev(42, 1, 101, 30078, d("a")), Stored}}, []int{42, 41}},
		{"addressable without d is d empty", []step{
			{ev(50, 1, 100, 30315), Stored}, {ev(51, 1, 101, 30315, d("")), Stored}}, []int{51}},
		{"regular kinds are never replaced", []step{
			{ev(60, 1, 100, 1), Stored}, {ev(61, 1, 101, 1), Stored}}, []int{61, 60}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{})
			for _, st := range c.steps {
				if got := s.Add(st.e); got.Status != st.want {
					t.Fatalf("Add(id %s) = %v, want %v", st.e.ID[60:], got.Status, st.want)
				}
			}
			kind := c.steps[0].e.Kind
			got := idsOf(s.Query([]Filter{{Kinds: []int{kind}}}, Reader{}))
			if !slices.Equal(got, hexIDs(c.current...)) {
				t.Fatalf("stored %v, want %v", got, hexIDs(c.current...))
			}
			if s.Len() != len(c.current) {
				t.Fatalf("Len %d, want %d", s.Len(), len(c.current))
			}
		})
	}
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 0))
	if r := s.Add(ev(2, 1, 101, 0)); r.Replaced == nil || r.Replaced.ID != hexID(1) {
		t.Fatalf("Replaced = %v, want the old profile", r.Replaced)
	}
	if _, ok := s.Get(hexID(1)); ok {
		t.Fatalf("replaced version still readable by id")
	}
}

func TestDeletion(t *testing.T) {
	setup := func() *Store {
		s := New(Config{})
		mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
		mustAdd(t, s, ev(2, 2, 101, 9, h(chA)))
		mustAdd(t, s, ev(3, 2, 102, nostr.KindReaction, []string{"e", hexID(1)}))
		mustAdd(t, s, ev(4, 1, 103, 30315, []string{"d", "general"}))
		return s
	}
	t.Run("a deleted event leaves queries and counts and cannot return", func(t *testing.T) {
		s := setup()
		if _, ok := s.Delete(hexID(1)); !ok {
			t.Fatal("Delete failed")
		}
		if _, ok := s.Delete(hexID(1)); ok {
			t.Fatal("second Delete succeeded")
		}
		got := idsOf(s.Query([]Filter{{Kinds: []int{9}}}, Reader{}))
		if !slices.Equal(got, hexIDs(2)) {
			t.Fatalf("query after delete: %v", got)
		}
		if n, _ := s.Count([]Filter{{Kinds: []int{9}, Tags: map[string][]string{"h": {chA}}}}, Reader{}); n != 1 {
			t.Fatalf("count after delete = %d", n)
		}
		if r := s.Add(ev(1, 1, 100, 9, h(chA))); r.Status != Deleted {
			t.Fatalf("re-adding a deleted event: %v", r.Status)
		}
		if in, ok := s.Lookup(hexID(1)); !ok || !in.Deleted || in.Channel != chA {
			t.Fatalf("Lookup of tombstone = %+v %v", in, ok)
		}
	})
	t.Run("kind 5 deletes only its author's events unless admin", func(t *testing.T) {
		s := setup()
		del := ev(9, 1, 200, nostr.KindDeletion, []string{"e", hexID(2)})
		if got := s.ApplyDeletion(del, false); len(got) != 0 {
			t.Fatalf("non-author deleted %v", got)
		}
		if got := s.ApplyDeletion(del, true); !slices.Equal(got, hexIDs(2)) {
			t.Fatalf("admin deletion removed %v", got)
		}
		own := ev(10, 1, 200, nostr.KindDeletion, []string{"e", hexID(1)})
		if got := s.ApplyDeletion(own, false); !slices.Equal(got, hexIDs(1)) {
			t.Fatalf("author deletion removed %v", got)
		}
	})
	t.Run("a-tag deletion covers versions up to its created_at", func(t *testing.T) {
		s := setup()
		coord := "30315:" + pk(1) + ":general"
		del := ev(11, 1, 150, nostr.KindDeletion, []string{"a", coord})
		if got := s.ApplyDeletion(del, false); !slices.Equal(got, hexIDs(4)) {
			t.Fatalf("a deletion removed %v", got)
		}
		if r := s.Add(ev(12, 1, 149, 30315, []string{"d", "general"})); r.Status != Deleted {
			t.Fatalf("older version after a-deletion: %v", r.Status)
		}
		if r := s.Add(ev(13, 1, 151, 30315, []string{"d", "general"})); r.Status != Stored {
			t.Fatalf("newer version after a-deletion: %v", r.Status)
		}
	})
	t.Run("deleting a reaction frees it to be made again", func(t *testing.T) {
		s := setup()
		again := ev(20, 2, 300, nostr.KindReaction, []string{"e", hexID(1)})
		again.Content = "m3" // the content of reaction 3
		if _, err := s.CheckReaction(again); err != ErrDuplicateReaction {
			t.Fatalf("before delete: %v", err)
		}
		s.Delete(hexID(3))
		if _, err := s.CheckReaction(again); err != nil {
			t.Fatalf("after delete: %v", err)
		}
	})
}

func TestReactionChecks(t *testing.T) {
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
	r := func(id, author int, content string, target int) *nostr.Event {
		e := ev(id, author, 100, nostr.KindReaction, []string{"e", hexID(target)}, []string{"p", pk(1)})
		e.Content = content
		return e
	}
	if _, err := s.CheckReaction(r(2, 2, "+", 99)); err != ErrReactionTargetNotFound {
		t.Fatalf("missing target: %v", err)
	}
	if tgt, err := s.CheckReaction(r(2, 2, "+", 1)); err != nil || tgt.ID != hexID(1) {
		t.Fatalf("valid reaction: %v %v", tgt, err)
	}
	res := s.Add(r(2, 2, "+", 1))
	if res.Status != Stored || res.Channel != chA {
		t.Fatalf("reaction without h: %v channel %q, want stored in the target's channel", res.Status, res.Channel)
	}
	if got := s.Add(r(3, 2, "+", 1)); got.Status != DuplicateReaction {
		t.Fatalf("same author, target and content: %v", got.Status)
	}
	if got := s.Add(r(4, 2, "🔥", 1)); got.Status != Stored {
		t.Fatalf("other content: %v", got.Status)
	}
	if got := s.Add(r(5, 3, "+", 1)); got.Status != Stored {
		t.Fatalf("other author: %v", got.Status)
	}
	got := idsOf(s.Query([]Filter{{Kinds: []int{7}, Tags: map[string][]string{"h": {chA}}}}, Reader{}))
	if len(got) != 3 {
		t.Fatalf("#h query of reactions without h found %d, want 3", len(got))
	}
}

func TestThreadDepthAndReplyChecks(t *testing.T) {
	s := New(Config{})
	mustAdd(t, s, ev(1, 1, 100, 9, h(chA)))
	mustAdd(t, s, ev(2, 1, 100, 9, h(chB)))
	prev := 1
	for d := 1; d <= MaxThreadDepth; d++ {
		e := ev(1000+d, 1, 100+d, 9, h(chA), rootTag(1), replyTo(prev))
		got, err := s.CheckReply(e)
		if err != nil || got != d {
			t.Fatalf("reply at depth %d: depth %d, %v", d, got, err)
		}
		mustAdd(t, s, e)
		prev = 1000 + d
	}
	cases := []struct {
		name string
		e    *nostr.Event
		want error
	}{
		{"depth 101 is refused", ev(5000, 1, 500, 9, h(chA), rootTag(1), replyTo(1000+MaxThreadDepth)), ErrDepthExceeded},
		{"missing parent", ev(5001, 1, 500, 9, h(chA), replyTo(77)), ErrParentNotFound},
		{"parent in another channel", ev(5002, 1, 500, 9, h(chA), replyTo(2)), ErrParentOtherChannel},
		{"root tag must match ancestry", ev(5003, 1, 500, 9, h(chA), rootTag(2), replyTo(1001)), ErrRootMismatch},
		{"not a reply without a reply marker", ev(5004, 1, 500, 9, h(chA), rootTag(1)), nil},
		{"a deleted parent still anchors replies", ev(5005, 1, 500, 9, h(chA), replyTo(3)), nil},
	}
	mustAdd(t, s, ev(3, 1, 100, 9, h(chA)))
	s.Delete(hexID(3))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := s.CheckReply(c.e); err != c.want {
				t.Fatalf("CheckReply = %v, want %v", err, c.want)
			}
		})
	}
	in, _ := s.Lookup(hexID(1050))
	if in.Depth != 50 || in.Root != hexID(1) || in.Parent != hexID(1049) || in.TopLevel {
		t.Fatalf("Lookup of a depth-50 reply: %+v", in)
	}
}
