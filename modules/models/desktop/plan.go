package desktop

// RouteKind is what a subscription route carries.
type RouteKind uint8

// The route kinds, in setup order.
const (
	RouteProfiles   RouteKind = iota // global: profiles, statuses, emoji sets
	RouteMembership                  // global: notifications, own read state, own reminders
	RoutePresence                    // live-only presence of up to 256 co-members
	RouteBatch                       // a replaying channel batch kept open (≤ 10 channels)
	RouteLive                        // current, > 10 channels: live-only over ≤ 2048 channels
	RouteReplay                      // current, > 10 channels: replay of ≤ 10 channels closed at EOSE
)

var routeNames = [...]string{"profiles", "membership", "presence", "batch", "live", "replay"}

func (k RouteKind) String() string {
	if int(k) < len(routeNames) {
		return routeNames[k]
	}
	return "route?"
}

// Op is the operation name its EOSE wait is reported under.
func (k RouteKind) Op() string {
	switch k {
	case RouteReplay:
		return OpReplayEOSE
	case RoutePresence:
		// Presence comes from the later LOADGEN, not the PR: its own op
		// keeps desktop_live_eose comparable with the PR's table.
		return OpPresenceEOSE
	}
	return OpLiveEOSE
}

// Global reports whether the route is one of the two global replays.
func (k RouteKind) Global() bool { return k == RouteProfiles || k == RouteMembership }

// Channel reports whether the route carries channel traffic.
func (k RouteKind) Channel() bool { return k >= RouteBatch }

// Replays reports whether the route replays history (limit 500) and so
// can keep or lose continuity. Live-only routes replay nothing.
func (k RouteKind) Replays() bool { return k != RoutePresence && k != RouteLive }

// Route is one planned subscription: its kind and, for channel routes, the
// indexes of its channels in Params.Channels.
type Route struct {
	Kind     RouteKind
	Channels []int
}

// PlanRoutes is the cold-start subscription plan: the two globals, presence
// (when there is a co-member), then the channel routes batched per mode:
//   - up to 10 channels: one replaying batch, in both modes;
//   - legacy with more: one replaying batch per 10 channels;
//   - current with more: a live-only subscription per liveScope channels
//     (0: LiveOnlyScope, 2048), then replays of 10 channels closed at EOSE.
func PlanRoutes(mode Mode, channels int, presence bool, liveScope int) []Route {
	if liveScope <= 0 {
		liveScope = LiveOnlyScope
	}
	rs := []Route{{Kind: RouteProfiles}, {Kind: RouteMembership}}
	if presence {
		rs = append(rs, Route{Kind: RoutePresence})
	}
	if channels == 0 {
		return rs
	}
	if channels <= BatchSize || mode == ModeLegacy {
		for _, g := range chunks(channels, BatchSize) {
			rs = append(rs, Route{Kind: RouteBatch, Channels: g})
		}
		return rs
	}
	for _, g := range chunks(channels, liveScope) {
		rs = append(rs, Route{Kind: RouteLive, Channels: g})
	}
	for _, g := range chunks(channels, BatchSize) {
		rs = append(rs, Route{Kind: RouteReplay, Channels: g})
	}
	return rs
}

// chunks splits 0..n-1 into consecutive runs of at most size.
func chunks(n, size int) [][]int {
	var out [][]int
	for lo := 0; lo < n; lo += size {
		g := make([]int, 0, min(size, n-lo))
		for i := lo; i < n && i < lo+size; i++ {
			g = append(g, i)
		}
		out = append(out, g)
	}
	return out
}
