package relayclient

import "time"

// Watcher sees every connection's life (issue 42: disruptions are detected
// from the clients' side, over every WebSocket of the run): when it was
// up (authenticated), how many live subscriptions it holds, and how it
// ended — the close code and reason the relay sent, or 1006 for a
// connection that ended without a close frame. A Sink that also has a
// `Watcher() Watcher` method (WatcherSource) hands one to its connections;
// calls come from connection readers and must not block.
type Watcher interface {
	ConnUp(self, host string, at time.Time)
	SubsLive(self, host string, n int, at time.Time)
	ConnEnded(e ConnEnd)
}

// ConnEnd is how one connection ended.
type ConnEnd struct {
	Self, Host string
	At         time.Time
	Code       int    // the close frame's code; 1006 without one
	Reason     string // its reason, or why the connection was lost
	ByUs       bool   // this client closed it
	LiveSubs   int    // subscriptions past their EOSE, open at the end
}

// WatcherSource is a Sink that carries the run's connection watcher.
type WatcherSource interface {
	Watcher() Watcher
}

// WatcherOf is sink's watcher, nil when it has none.
func WatcherOf(sink Sink) Watcher {
	return sourceOf(sink, func(s Sink) (Watcher, bool) {
		if src, ok := s.(WatcherSource); ok {
			return src.Watcher(), true
		}
		return nil, false
	})
}
