package seed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ---- phase 4: posts ----

type postKind uint8

const (
	postHistory postKind = iota
	postThread
	postHotReply
)

// postTask is one unit of the post pool: a history message, a whole thread
// chain (sequential inside), or one hot-thread reply.
type postTask struct {
	p    *channelPlan
	kind postKind
	n    int
}

func (s *seeder) posts(ctx context.Context) error {
	sh := s.sc.Shape
	s.track.start(PhasePosts, s.res.Posts.Planned)
	if s.res.Posts.Planned == 0 {
		return nil
	}
	var fe firstErr
	forEach(ctx, len(s.plans), s.conc, func(ctx context.Context, i int) {
		if err := s.readPosts(ctx, s.plans[i]); err != nil {
			fe.set(err)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fe.get(); err != nil {
		return err
	}

	var tasks []postTask
	for _, p := range s.plans {
		for j := range sh.HistoryMessagesPerChannel {
			tasks = append(tasks, postTask{p, postHistory, j})
		}
		for t := range sh.ThreadRootsPerChannel {
			tasks = append(tasks, postTask{p, postThread, t})
		}
	}
	// The hot root goes first: its replies need its id.
	var hotRoot string
	if s.sc.HotThreadEnabled() {
		hp := s.plans[0] // community 0, channel 0: Scenario.HotThreadChannel
		id, err := s.hotRoot(ctx, hp)
		if err != nil {
			return err
		}
		hotRoot = id
		if hotRoot != "" {
			for k := 1; k <= s.sc.HotThread.SeedReplies; k++ {
				tasks = append(tasks, postTask{hp, postHotReply, k})
			}
		}
	}
	forEach(ctx, len(tasks), s.conc, func(ctx context.Context, i int) {
		t := tasks[i]
		var err error
		switch t.kind {
		case postHistory:
			err = s.history(ctx, t.p, t.n)
		case postThread:
			err = s.thread(ctx, t.p, t.n)
		case postHotReply:
			err = s.hotReply(ctx, t.p, hotRoot, t.n)
		}
		if err != nil {
			fe.set(err)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := fe.get(); err != nil {
		return err
	}
	s.finish()
	if lost := s.res.Posts.Refused + s.res.Posts.Skipped; lost > 0 {
		return fmt.Errorf("the relay did not accept %d of %d planned posts (%d refused, %d not sent after a refused thread parent): %s",
			lost, s.res.Posts.Planned, s.res.Posts.Refused, s.res.Posts.Skipped, s.firstRefusal(PhasePosts))
	}
	return nil
}

// readPosts finds the channel's seeded posts already on the relay: kind-9
// events by the slots' authors whose content is a slot's and whose author
// is that slot's, paged newest first until a page comes back empty.
func (s *seeder) readPosts(ctx context.Context, p *channelPlan) error {
	sh := s.sc.Shape
	want := map[string]string{} // content → author pubkey
	add := func(content string, g int) error {
		a, err := s.poster(p, g)
		if err != nil {
			return err
		}
		want[content] = a.keys.PubKey()
		return nil
	}
	for j := range sh.HistoryMessagesPerChannel {
		c := HistoryContent(p.ch, j)
		if err := add(c, p.poster(c)); err != nil {
			return err
		}
	}
	for t := range sh.ThreadRootsPerChannel {
		c := scenario.ThreadRootContent(s.sc.RunID, p.ch, t)
		if err := add(c, p.poster(c)); err != nil {
			return err
		}
		for k := 1; k <= sh.ThreadDepth; k++ {
			c := ReplyContent(p.ch, t, k)
			if err := add(c, p.poster(c)); err != nil {
				return err
			}
		}
	}
	if p.ch == s.sc.HotThreadChannel() && s.sc.HotThreadEnabled() {
		if err := add(scenario.HotRootContent(s.sc.RunID), p.hotPoster(0)); err != nil {
			return err
		}
		for k := 1; k <= s.sc.HotThread.SeedReplies; k++ {
			if err := add(HotReplyContent(k), p.hotPoster(k)); err != nil {
				return err
			}
		}
	}
	p.found = map[string]existing{}
	if len(want) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var authors []string
	for _, pk := range want {
		if !seen[pk] {
			seen[pk] = true
			authors = append(authors, pk)
		}
	}
	h, err := s.rpc.community(p.ch.Community, s.ids.owner(p.ch.Community).keys, nil)
	if err != nil {
		return err
	}
	for len(authors) > 0 {
		chunk := authors[:min(len(authors), authorsPerFilter)]
		authors = authors[len(chunk):]
		var until int64
		var before string
		for {
			f := relayclient.Filter{Kinds: []int{nostr.KindStreamMessage}, Tags: map[string][]string{"h": {p.id}},
				Authors: chunk, Limit: queryPageLimit}
			if until > 0 {
				f.Until, f.Extra = until, map[string]any{"before_id": before}
			}
			evs, err := s.rpc.query(ctx, h, "the seeded posts of channel "+chName(p.ch), []relayclient.Filter{f})
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				break
			}
			for i := range evs {
				e := &evs[i]
				if pk, ok := want[e.Content]; ok && pk == e.PubKey && e.TagValue("h") == p.id {
					if old, dup := p.found[e.Content]; !dup || e.CreatedAt < old.createdAt {
						p.found[e.Content] = existing{id: e.ID, pubkey: e.PubKey, createdAt: e.CreatedAt}
					}
				}
			}
			last := evs[len(evs)-1]
			if last.CreatedAt == until && last.ID == before {
				break
			}
			until, before = last.CreatedAt, last.ID
		}
	}
	return nil
}

// poster resolves a slot's author (g = -1: the community owner).
func (s *seeder) poster(p *channelPlan, g int) (*author, error) {
	if g < 0 {
		return s.ids.owner(p.ch.Community), nil
	}
	return s.ids.client(g)
}

func (s *seeder) lookup(p *channelPlan, content string) (existing, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.found[content]
	return e, ok
}

// post publishes one kind-9 as g and accounts for it. It returns the event
// id, or "" when the relay refused it (recorded as a refusal named what).
func (s *seeder) post(ctx context.Context, p *channelPlan, g int, op, what, content string, tags [][]string) (string, error) {
	a, err := s.poster(p, g)
	if err != nil {
		return "", err
	}
	h, err := s.rpc.community(p.ch.Community, a.keys, a.oa)
	if err != nil {
		return "", err
	}
	pub, err := s.rpc.publish(ctx, h, op, func(at time.Time) (*nostr.Event, error) {
		return a.keys.NewEvent(nostr.KindStreamMessage, tags, content, at)
	})
	if err != nil {
		return "", err
	}
	if why := pub.why; why != "" {
		s.count(func(r *Result) { r.Posts.Refused++ })
		s.refuse(Refusal{Phase: PhasePosts, Community: p.ch.Community, Channel: p.ch.Index, ChannelID: p.id,
			What: what, Pubkey: a.keys.PubKey(), Reason: why})
		s.track.add(1)
		return "", nil
	}
	if pub.dup {
		s.existing(1) // the very event was there already
		return pub.ev.ID, nil
	}
	s.count(func(r *Result) { r.Posts.Created++ })
	s.track.add(1)
	return pub.ev.ID, nil
}

func (s *seeder) existing(n int) {
	s.count(func(r *Result) { r.Posts.Existing += n })
	s.track.add(n)
}

// skipped accounts for posts not sent because their thread parent was refused.
func (s *seeder) skipped(n int) {
	if n > 0 {
		s.track.add(n)
	}
}

func (s *seeder) history(ctx context.Context, p *channelPlan, j int) error {
	content := HistoryContent(p.ch, j)
	if _, ok := s.lookup(p, content); ok {
		s.existing(1)
		return nil
	}
	_, err := s.post(ctx, p, p.poster(content), OpHistory, "history "+strconv.Itoa(j), content, [][]string{{"h", p.id}})
	return err
}

// thread seeds thread t as a chain: the root, then reply k replying to
// reply k-1 (NIP-10: a root-marked e tag for the root and a reply-marked one
// for the parent; the first reply has only the reply-marked root). A rerun
// resumes after the longest prefix already there; once something is posted
// anew, later replies are posted anew too, since their parent changed.
func (s *seeder) thread(ctx context.Context, p *channelPlan, t int) error {
	depth := s.sc.Shape.ThreadDepth
	name := "thread " + strconv.Itoa(t)
	fresh := false
	root := ""
	if e, ok := s.lookup(p, scenario.ThreadRootContent(s.sc.RunID, p.ch, t)); ok {
		root = e.id
		s.existing(1)
	} else {
		c := scenario.ThreadRootContent(s.sc.RunID, p.ch, t)
		id, err := s.post(ctx, p, p.poster(c), OpThread, name+" root", c, [][]string{{"h", p.id}})
		if err != nil || id == "" {
			s.skipped(depth)
			return err
		}
		root, fresh = id, true
	}
	parent := root
	for k := 1; k <= depth; k++ {
		content := ReplyContent(p.ch, t, k)
		if !fresh {
			if e, ok := s.lookup(p, content); ok {
				parent = e.id
				s.existing(1)
				continue
			}
		}
		fresh = true
		tags := [][]string{{"h", p.id}, {"e", root, "", "reply"}}
		if k > 1 {
			tags = [][]string{{"h", p.id}, {"e", root, "", "root"}, {"e", parent, "", "reply"}}
		}
		id, err := s.post(ctx, p, p.poster(content), OpThread, name+" reply "+strconv.Itoa(k), content, tags)
		if err != nil || id == "" {
			s.skipped(depth - k)
			return err
		}
		parent = id
	}
	return nil
}

// hotRoot finds or posts the hot thread's root; "" when the relay refused it.
func (s *seeder) hotRoot(ctx context.Context, p *channelPlan) (string, error) {
	content := scenario.HotRootContent(s.sc.RunID)
	if e, ok := s.lookup(p, content); ok {
		s.existing(1)
		return e.id, nil
	}
	id, err := s.post(ctx, p, p.hotPoster(0), OpHot, "hot root", content, [][]string{{"h", p.id}})
	if err == nil && id == "" {
		s.skipped(s.sc.HotThread.SeedReplies)
	}
	return id, err
}

// hotReply posts seeded reply k directly under the hot root.
func (s *seeder) hotReply(ctx context.Context, p *channelPlan, root string, k int) error {
	content := HotReplyContent(k)
	if _, ok := s.lookup(p, content); ok {
		s.existing(1)
		return nil
	}
	_, err := s.post(ctx, p, p.hotPoster(k), OpHot, "hot reply "+strconv.Itoa(k), content,
		[][]string{{"h", p.id}, {"e", root, "", "reply"}})
	return err
}
