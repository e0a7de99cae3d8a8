package plan

import (
	"math/rand/v2"
	"time"

	"github.com/buzzload/buzzload/modules/models"
)

// hotAuthor is a hot-thread author (models.hotSession): Poisson replies
// and fetches of the newest 100 replies over HTTP, the first attempt a
// search for the seeded root.
type hotAuthor struct {
	rng                  *rand.Rand
	nextReply, nextFetch time.Duration
	started, rootFound   bool
	ch                   int
}

func newHotAuthor(s *sim, g int) *hotAuthor {
	return &hotAuthor{rng: models.NewRand(s.sc.RunID, g), ch: s.dense(s.sc.HotThreadChannel())}
}

func (h *hotAuthor) gap(perHour float64) time.Duration {
	if perHour <= 0 {
		return never
	}
	return models.ExpDuration(h.rng, float64(time.Hour)/perHour)
}

func (h *hotAuthor) wake(s *sim, now time.Duration) time.Duration {
	ht := s.sc.HotThread
	if !h.started {
		h.started = true
		h.nextReply, h.nextFetch = never, never
		if ht.RepliesPerHour > 0 {
			h.nextReply = now + h.gap(ht.RepliesPerHour)
		}
		if ht.FetchesPerHour > 0 {
			h.nextFetch = now + h.gap(ht.FetchesPerHour)
		}
		return min(h.nextReply, h.nextFetch)
	}
	for min(h.nextReply, h.nextFetch) <= now {
		reply := h.nextReply <= h.nextFetch
		if reply {
			h.nextReply += h.gap(ht.RepliesPerHour)
		} else {
			h.nextFetch += h.gap(ht.FetchesPerHour)
		}
		if !h.rootFound {
			s.httpCall(models.OpThreadFetch, "POST", "/query", 1)
			h.rootFound = !s.failed()
			continue
		}
		if reply {
			s.httpEvent(models.OpHotReply, kindMessage, h.ch, true)
			s.markReply(int32(h.ch))
			continue
		}
		s.httpCall(models.OpThreadFetch, "POST", "/query", min(100, s.storedSince(h.ch, 0)))
	}
	return min(h.nextReply, h.nextFetch)
}
