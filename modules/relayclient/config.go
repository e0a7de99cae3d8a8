package relayclient

import (
	"errors"
	"net/http"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
)

// Defaults.
const (
	DefaultConnectTimeout = 10 * time.Second // connect + auth (target.connect_timeout_secs)
	DefaultPublishTimeout = 30 * time.Second // from the start of the send to the OK
	DefaultEOSETimeout    = 30 * time.Second // REQ → EOSE
	DefaultWriteTimeout   = 10 * time.Second // any frame other than EVENT
	DefaultMaxFrameBytes  = 4 << 20          // inbound frames larger than this are discarded and counted
	DefaultReadBufferSize = 1024             // per connection, held for its life
	writeBufferSize       = 4096             // pooled: only held while a frame is written
)

// Default operation names (buzz-loadgen's).
const (
	OpConnect       = "connect"
	OpAuth          = "auth"
	OpPublish       = "publish"
	OpSubscribeEOSE = "subscribe_eose"
	OpCount         = "count"
	OpBadFrame      = "bad_frame" // an inbound frame we could not use
	OpNotice        = "notice"    // a rate-limited NOTICE that settled no operation
)

// Errors.
var (
	ErrClosed = errors.New("relay: connection closed")
)

// OpError is returned when an operation did not end ok; Result is what was
// recorded (Outcome tells throttled from error, RetryAfter how long to wait).
type OpError struct{ Result Result }

func (e *OpError) Error() string {
	return e.Result.Op + ": " + e.Result.Outcome.String() + ": " + e.Result.Error
}

// Config configures one WebSocket connection. Zero values take the defaults.
type Config struct {
	Target Target
	Keys   *nostr.Keys // the identity AUTH signs with (required for Auth)
	OATag  []string    // NIP-OA ["auth", owner, conditions, sig] for agents; nil for humans
	Sink   Sink        // nil drops Results

	ConnectTimeout time.Duration // bounds connect + auth in Connect
	PublishTimeout time.Duration // default for Publish
	EOSETimeout    time.Duration // default for Subscribe
	WriteTimeout   time.Duration // deadline of a non-EVENT write
	MaxFrameBytes  int           // inbound frame limit (discard and count beyond it)
	ReadBufferSize int           // gorilla read buffer (the goroutine reader's)
	// NoPoller reads this connection with a goroutine of its own even where
	// the shared epoll loops could (plain ws:// on Linux); the environment
	// variable BUZZLOAD_NETPOLL=0 does the same for every connection.
	NoPoller bool
	// ReadIdleTimeout ends the connection (as lost) when neither a frame nor
	// a ping arrives for this long; Buzz pings every 30 s. 0 = never.
	ReadIdleTimeout time.Duration

	Header http.Header // extra upgrade headers (e.g. Buzz-Client); Host is set from Target

	// OnNotice sees every NOTICE with its arrival time (on the reader; must not block, see Conn).
	OnNotice func(text string, at time.Time)
	// OnDisconnect is called once when the connection ends; err is nil after our Close.
	OnDisconnect func(err error)
}

func (c *Config) withDefaults() {
	if c.Sink == nil {
		c.Sink = NopSink{}
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.EOSETimeout == 0 {
		c.EOSETimeout = DefaultEOSETimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.ReadBufferSize <= 0 {
		c.ReadBufferSize = DefaultReadBufferSize
	}
}

// Stats are a connection's counters.
type Stats struct {
	FramesIn   int64 // frames read
	BytesIn    int64 // payload bytes read
	FramesOut  int64 // frames written
	BytesOut   int64 // payload bytes written
	BadFrames  int64 // frames that became bad_frame errors
	Notices    int64 // NOTICEs received
	LateFrames int64 // answers for operations already settled (late OK, events after our CLOSE)
}
