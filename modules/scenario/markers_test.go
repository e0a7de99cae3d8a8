package scenario

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Seed writes these contents and the clients search for these words, in
// different processes and possibly different buzzload versions (a rerun
// of seed must recognise what an earlier version seeded): the values are
// pinned, not just compared with themselves.
func TestRootMarkersAndContentsArePinned(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"thread root marker", RootMarker("smoke-1"), "bzlrootdea79d61ebea"},
		{"hot root marker", HotRootMarker("smoke-1"), "bzlhot6cfce2cc9f74"},
		{"thread root content", ThreadRootContent("smoke-1", Channel{Community: 3, Index: 17}, 9), "thread 9 of channel 3/17 bzlrootdea79d61ebea"},
		{"hot root content", HotRootContent("smoke-1"), "hot thread bzlhot6cfce2cc9f74"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

// A marker must survive any full-text tokenizer whole, differ between runs
// (runs never find each other's roots) and between the two kinds of root.
func TestRootMarkersAreOneTokenPerRunAndKind(t *testing.T) {
	token := regexp.MustCompile(`^[a-z0-9]+$`)
	seen := map[string]string{}
	for _, run := range []string{"smoke-1", "x", "Run.With_Caps-2", ""} {
		for kind, m := range map[string]string{"thread": RootMarker(run), "hot": HotRootMarker(run)} {
			if !token.MatchString(m) {
				t.Errorf("%s marker of %q is not one token: %q", kind, run, m)
			}
			if prev, dup := seen[m]; dup {
				t.Errorf("%s marker of %q equals the one of %s", kind, run, prev)
			}
			seen[m] = kind + " " + run
		}
		for _, ch := range []Channel{{Community: 0, Index: 0}, {Community: 3, Index: 17}} {
			if c := ThreadRootContent(run, ch, 1); !regexp.MustCompile(`\b` + RootMarker(run) + `$`).MatchString(c) {
				t.Errorf("thread root content %q does not end with its marker", c)
			}
		}
		if c := HotRootContent(run); !regexp.MustCompile(`\b` + HotRootMarker(run) + `$`).MatchString(c) {
			t.Errorf("hot root content %q does not end with its marker", c)
		}
	}
}

func TestSentAt(t *testing.T) {
	at := time.UnixMicro(1_700_000_000_123_456)
	for _, c := range []struct {
		name string
		tags [][]string
		ok   bool
	}{
		{"the tag SentAtTag renders reads back", [][]string{{"h", "c"}, SentAtTag(at)}, true},
		{"no tag is no send time", [][]string{{"h", "c"}}, false},
		{"a tag without a value is no send time", [][]string{{SentTag}}, false},
		{"a value that is not a number is no send time", [][]string{{SentTag, "soon"}}, false},
		{"zero is no send time", [][]string{{SentTag, "0"}}, false},
		{"a negative value is no send time", [][]string{{SentTag, "-5"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := SentAt(&nostr.Event{Tags: c.tags})
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if ok && !got.Equal(at) {
				t.Fatalf("send time %v, want %v", got, at)
			}
		})
	}
}

func TestMarkedRoots(t *testing.T) {
	const w = "bzlrootabc"
	msg := func(id string, at int64, content string, tags ...[]string) nostr.Event {
		return nostr.Event{ID: id, Kind: nostr.KindStreamMessage, CreatedAt: at, Content: content, Tags: tags}
	}
	for _, c := range []struct {
		name string
		evs  []nostr.Event
		want []string
	}{
		{"roots come newest first whatever order the relay sent",
			[]nostr.Event{msg("a", 1, "thread 0 "+w), msg("b", 3, "thread 1 "+w), msg("c", 2, "thread 2 "+w)}, []string{"b", "c", "a"}},
		{"roots of the same second come by lower id",
			[]nostr.Event{msg("d", 5, w), msg("b", 5, w)}, []string{"b", "d"}},
		{"a loose search match without the word is not a root",
			[]nostr.Event{msg("a", 1, "thread 0 bzlroot"), msg("b", 1, w)}, []string{"b"}},
		{"a reply quoting the word is not a root",
			[]nostr.Event{msg("a", 1, w), msg("r", 2, "re "+w, []string{"e", "a", "", "reply"}), msg("s", 3, w, []string{"e", "a", "", "root"})}, []string{"a"}},
		{"an unmarked e tag (a mention) does not make a reply",
			[]nostr.Event{msg("a", 1, w, []string{"e", "x"})}, []string{"a"}},
		{"other kinds are not roots",
			[]nostr.Event{{ID: "k", Kind: nostr.KindStreamMessage + 1, Content: w}}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := MarkedRoots(c.evs, w)
			if !slices.Equal(got, c.want) {
				t.Fatalf("MarkedRoots = %v, want %v", got, c.want)
			}
		})
	}
}
