// The model's inputs (events, each with the time it happened) and outputs
// (actions for the driver).

package desktop

import "time"

// Event is something that happened to the client: an input of Model.Step.
// Every event carries the time it happened; the model reads no clock.
type Event interface{ event() }

// Start is the client's cold start.
type Start struct{ At time.Time }

// Connected says the connection asked for by Connect{Epoch} is up and
// authenticated.
type Connected struct {
	At    time.Time
	Epoch int
}

// ConnectFailed says the connection asked for by Connect{Epoch} failed.
type ConnectFailed struct {
	At    time.Time
	Epoch int
}

// Disconnected says connection Epoch ended without being asked to: a
// failed session.
type Disconnected struct {
	At    time.Time
	Epoch int
	// Lease: the relay ended a NIP-FI session lease (relayclient.LeaseReason):
	// an ordinary reconnect, not a failure.
	Lease bool
}

// EOSE says subscription Sub's EOSE arrived at At after Count replayed
// events. It is judged by arrival: an EOSE that arrived more than
// EOSETimeout after the REQ went out is a timeout, however long it waited
// to be read. Sent is when the REQ actually went out (the driver's clock,
// a little after the model asked); zero means when the model asked.
type EOSE struct {
	Sub   string
	At    time.Time
	Count int
	Sent  time.Time
}

// SubFailed says subscription Sub will not reach EOSE: no EOSE came within
// its deadline and one more timeout (the wait for frames that arrived in
// time but were not yet read), or the relay closed it first.
type SubFailed struct {
	Sub string
	At  time.Time
}

// SubClosed says the relay closed subscription Sub after its EOSE, or
// refused it before one with a throttle; Reason is the CLOSED's message.
type SubClosed struct {
	Sub    string
	At     time.Time
	Reason string
}

// ReadSettled says a read finished. OK is the outcome of its main
// requests; SnapshotOK, for a full unread repair, that of its snapshot.
type ReadSettled struct {
	Read       ReadKey
	At         time.Time
	OK         bool
	SnapshotOK bool
}

// Wake is the passage of time: timers due at or before At run. LastFrame
// is when the latest frame from the relay arrived (zero: none).
type Wake struct {
	At        time.Time
	LastFrame time.Time
}

// SessionEnd is the human's session end: an ordinary reconnect.
type SessionEnd struct{ At time.Time }

// Stop ends the client.
type Stop struct{ At time.Time }

func (Start) event()         {}
func (Connected) event()     {}
func (ConnectFailed) event() {}
func (Disconnected) event()  {}
func (EOSE) event()          {}
func (SubFailed) event()     {}
func (SubClosed) event()     {}
func (ReadSettled) event()   {}
func (Wake) event()          {}
func (SessionEnd) event()    {}
func (Stop) event()          {}

// Action is what the model asks the driver to do: an output of Model.Step.
type Action interface{ action() }

// Connect opens connection Epoch: read NIP-11 first when NIP11 is set,
// then dial and authenticate. Renewal marks a current-mode renewal (a new
// identity proof; the routes are carried).
type Connect struct {
	Epoch   int
	NIP11   bool
	Renewal bool
}

// Disconnect closes the current connection (if any).
type Disconnect struct{}

// OpenSub sends a REQ.
type OpenSub struct{ Spec SubSpec }

// CloseSub sends a CLOSE.
type CloseSub struct{ ID string }

// StartRead runs a read (the limiter has admitted it).
type StartRead struct{ Read Read }

func (Connect) action()    {}
func (Disconnect) action() {}
func (OpenSub) action()    {}
func (CloseSub) action()   {}
func (StartRead) action()  {}

// SubSpec is one REQ to send; SubFilters turns it into its wire filters.
type SubSpec struct {
	ID    string
	Op    string    // the EOSE wait's operation name
	Route RouteKind // what it carries (RouteMembership for the probe)
	// Channels are indexes into Params.Channels (channel routes).
	Channels []int
	Since    int64 // unix seconds on every filter
	// LiveOnly asks for no replay (limit 0): presence, current's live-only
	// channel subscription, tick replacements and the probe. A live-only
	// channel REQ is one filter over all its channels.
	LiveOnly bool
	Probe    bool // the silence probe
}
