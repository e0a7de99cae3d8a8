package agent

// The model's inputs (events, each with its time) and outputs (actions).

import "time"

// Event is an input of Model.Step; every event carries its time.
type Event interface{ event() }

// Resume says a session (connection) starts: the first, or one after a
// reconnect.
type Resume struct{ At time.Time }

// HTTPDue says the HTTP sequence woke at At (NextHTTP was due): Step
// returns at most one HTTP request.
type HTTPDue struct{ At time.Time }

// SocketDue says the socket side woke at At (NextSocket was due): Step
// returns what to send.
type SocketDue struct{ At time.Time }

// Done says the outstanding HTTP request finished at At; OK is its outcome.
type Done struct {
	At time.Time
	OK bool
}

// NewestRead is the result of ReadNewest: Msg is nil when the channel is
// empty or the read failed.
type NewestRead struct {
	At  time.Time
	Msg *Message
}

// ThreadRead is the result of ReadThread: Replies counts the events other
// than the root.
type ThreadRead struct {
	At      time.Time
	OK      bool
	Replies int
}

// ReactionsFound is the result of FindReactions: the reactions returned.
type ReactionsFound struct {
	At        time.Time
	Reactions []Reaction
}

func (Resume) event()         {}
func (HTTPDue) event()        {}
func (SocketDue) event()      {}
func (Done) event()           {}
func (NewestRead) event()     {}
func (ThreadRead) event()     {}
func (ReactionsFound) event() {}

// Message is the message a turn answers.
type Message struct {
	ID, PubKey string
	Root       string // its thread's root; "" for a top-level message
}

// Reaction is one reaction a lookup returned.
type Reaction struct{ ID, PubKey, Content string }

// Action is an output of Model.Step.
type Action interface{ action() }

// HTTP requests (one at a time; each is answered by a result event).
type (
	// Poll is one /query of the channel windows plus mentions since Since.
	Poll struct{ Since int64 }
	// PostMessage posts timed message number Seq to Channel.
	PostMessage struct {
		Channel int
		Seq     uint64
	}
	// ReadNewest is a turn's http_query of its channel's newest message.
	ReadNewest struct{ Channel int }
	// ReadThread is the turn_context read of Root, its 13 newest replies
	// and the agent's own newest reply.
	ReadThread struct{ Root string }
	// CountReplies is the turn_context /count of Root's replies.
	CountReplies struct{ Root string }
	// ReadChannelMeta, ReadProject and ReadRepo are the turn_context reads
	// of the channel's kind 39000, 30621 and 30617.
	ReadChannelMeta struct{ Channel int }
	ReadProject     struct{ Channel int }
	ReadRepo        struct{ Channel int }
	// ReadProfile is the turn_context read of Author's kind 0.
	ReadProfile struct{ Author string }
	// React posts reaction Emoji to the message.
	React struct{ MsgID, Author, Emoji string }
	// ToolRead is a tool call's http_query of the channel's newest messages.
	ToolRead struct{ Channel int }
	// Reply posts the turn's timed reply number Seq: under Root when set
	// (a first-level reply), else top-level in Channel; Mention, when set,
	// is p-tagged.
	Reply struct {
		Channel       int
		Root, Mention string
		Seq           uint64
	}
	// FindReactions is the http_query of the agent's reactions on MsgID.
	FindReactions struct{ MsgID string }
	// Delete posts a kind:5 of event ID.
	Delete struct{ ID string }
)

// Socket sends (not waited for).
type (
	SendPresence struct{}
	// SendFrame is an observer frame to the owner (in or outside a turn).
	SendFrame  struct{}
	SendTyping struct{ Channel int }
)

// TurnEnded says turn N finished (for the driver's observers).
type TurnEnded struct{ N int }

func (Poll) action()            {}
func (PostMessage) action()     {}
func (ReadNewest) action()      {}
func (ReadThread) action()      {}
func (CountReplies) action()    {}
func (ReadChannelMeta) action() {}
func (ReadProject) action()     {}
func (ReadRepo) action()        {}
func (ReadProfile) action()     {}
func (React) action()           {}
func (ToolRead) action()        {}
func (Reply) action()           {}
func (FindReactions) action()   {}
func (Delete) action()          {}
func (SendPresence) action()    {}
func (SendFrame) action()       {}
func (SendTyping) action()      {}
func (TurnEnded) action()       {}
