package plan

import (
	"time"

	"github.com/buzzload/buzzload/modules/models"
	"github.com/buzzload/buzzload/modules/models/agent"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// agentSelf stands in for the agent's public key: the model only compares
// it with authors the plan also names.
const agentSelf = "self"

// bot is an agent: agent.Model makes every decision (polls, messages,
// turns, presence, frames) and the plan answers its HTTP requests as the
// relay would: a channel's newest message, a thread's replies, the
// reactions the turn itself posted.
type bot struct {
	m       *agent.Model
	chans   []int32
	started bool
	subs    bool
	busy    time.Duration // when the outstanding request's answer arrives (never: none)
	pending agent.Event
	reacted []agent.Reaction // the current turn's reactions
}

func newAgent(s *sim, g int) (actor, error) {
	chans := s.denseAll(s.sc.MemberChannels(g))
	m := models.NewAgentModel(s.sc, agentSelf, len(chans), models.NewRand(s.sc.RunID, g))
	return &bot{m: m, chans: chans, subs: s.sc.Agent.ChannelSubscriptions, busy: never}, nil
}

func (b *bot) wake(s *sim, now time.Duration) time.Duration {
	if !b.started {
		b.started = true
		s.connect("start")
		if b.subs {
			for range b.chans { // mentions in each channel
				s.req(relayclient.OpSubscribeEOSE, 1, 0)
			}
		}
		b.m.Step(agent.Resume{At: wall(now)})
	}
	for {
		if b.busy <= now {
			b.busy = never
			b.m.Step(b.pending)
			b.pending = nil
		}
		progressed := false
		if w := offset(b.m.NextSocket()); w <= now {
			for _, a := range b.m.Step(agent.SocketDue{At: wall(now)}) {
				switch a := a.(type) {
				case agent.SendPresence:
					s.event(nostr.KindPresence, -1, false)
				case agent.SendFrame:
					s.event(nostr.KindObserverFrame, -1, false)
				case agent.SendTyping:
					s.event(nostr.KindTyping, int(b.chans[a.Channel]), false)
				}
			}
			progressed = true
		}
		if b.busy == never {
			if w := offset(b.m.NextHTTP()); w <= now {
				for _, a := range b.m.Step(agent.HTTPDue{At: wall(now)}) {
					b.pending = b.request(s, now, a)
					b.busy = now + s.cfg.Latency
				}
				progressed = true
			}
		}
		if !progressed && b.busy > now {
			break
		}
	}
	next := offset(b.m.NextSocket())
	if b.busy != never {
		next = min(next, b.busy)
	} else {
		next = min(next, offset(b.m.NextHTTP()))
	}
	return next
}

// request makes one of the model's HTTP requests and returns the answer
// the relay would give.
func (b *bot) request(s *sim, now time.Duration, a agent.Action) agent.Event {
	at := wall(now + s.cfg.Latency)
	done := func(op, path string, n float64) agent.Event {
		s.httpCall(op, "POST", path, n)
		return agent.Done{At: at, OK: !s.failed()}
	}
	switch a := a.(type) {
	case agent.Poll:
		return done(relayclient.OpHTTPQuery, "/query", 0)
	case agent.PostMessage:
		s.httpEvent(relayclient.OpHTTPEvents, kindMessage, int(b.chans[a.Channel]), true)
		return agent.Done{At: at, OK: !s.failed()}
	case agent.ReadNewest:
		s.httpCall(relayclient.OpHTTPQuery, "POST", "/query", 1)
		c := &s.channels[b.chans[a.Channel]]
		if c.lastMsg < 0 || s.failed() {
			return agent.NewestRead{At: at}
		}
		msg := &agent.Message{ID: "newest", PubKey: "someone"}
		if c.lastReply {
			msg.Root = "root"
		}
		b.reacted = b.reacted[:0]
		return agent.NewestRead{At: at, Msg: msg}
	case agent.ReadThread:
		s.httpCall(models.OpTurnContext, "POST", "/query", float64(s.sc.Shape.ThreadDepth))
		return agent.ThreadRead{At: at, OK: !s.failed(), Replies: min(s.sc.Shape.ThreadDepth, agent.ThreadReplyWindow)}
	case agent.CountReplies:
		return done(models.OpTurnContext, "/count", 0)
	case agent.ReadChannelMeta, agent.ReadProject, agent.ReadRepo, agent.ReadProfile:
		return done(models.OpTurnContext, "/query", 1)
	case agent.React:
		s.httpEvent(relayclient.OpHTTPEvents, kindReaction, -1, false)
		b.reacted = append(b.reacted, agent.Reaction{ID: a.Emoji, PubKey: agentSelf, Content: a.Emoji})
		return agent.Done{At: at, OK: !s.failed()}
	case agent.ToolRead:
		return done(relayclient.OpHTTPQuery, "/query", 50)
	case agent.Reply:
		s.httpEvent(relayclient.OpHTTPEvents, kindMessage, int(b.chans[a.Channel]), true)
		if a.Root != "" {
			s.markReply(b.chans[a.Channel])
		}
		return agent.Done{At: at, OK: !s.failed()}
	case agent.FindReactions:
		s.httpCall(relayclient.OpHTTPQuery, "POST", "/query", float64(len(b.reacted)))
		return agent.ReactionsFound{At: at, Reactions: b.reacted}
	case agent.Delete:
		s.httpEvent(relayclient.OpHTTPEvents, nostr.KindDeletion, -1, false)
		return agent.Done{At: at, OK: !s.failed()}
	}
	return agent.Done{At: at, OK: true}
}
