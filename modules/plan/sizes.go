package plan

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/nostr/wire"
	"github.com/buzzload/buzzload/modules/scenario"
)

const (
	kindMessage  = nostr.KindStreamMessage
	kindReaction = nostr.KindReaction
)

func kindName(k int) string { return "kind " + strconv.Itoa(k) }

// sizes are the bytes of one frame or request of each shape, measured once
// by encoding a real signed sample (a channel message with its h, thread and
// send-time tags), so byte rates follow the scenario's ids and key sizes.
// They are estimates: contents are the generator's short texts.
type sizes struct {
	event, ok, eose, req, hTag, close    float64
	upgrade, upgradeReply, authChallenge float64
	auth                                 float64
	httpRequest, httpReply               float64
}

func measureSizes(sc *scenario.Scenario) sizes {
	keys := sc.Keys(0)
	ch := sc.ChannelID(scenario.Channel{})
	now := time.Unix(1_800_000_000, 0)
	var s sizes
	const sub = "live-12" // a subscription id as the clients name them
	if keys == nil {
		keys = nostr.DeriveKeys(sc.RunID, nostr.RoleHuman, 0)
	}
	msg, err := keys.NewEvent(nostr.KindStreamMessage, [][]string{{"h", ch}, {"e", strings.Repeat("0", 64), "", "reply"}, scenario.SentAtTag(now)},
		"load message 12345-67", now)
	if err == nil {
		s.event = float64(len(wire.EventEnvelope{SubID: sub, Event: msg.AppendJSON(nil)}.Append(nil)))
	}
	s.ok = float64(len(wire.OKEnvelope{EventID: strings.Repeat("0", 64), OK: true}.Append(nil)))
	s.eose = float64(len(wire.EOSEEnvelope{SubID: sub}.Append(nil)))
	s.req = float64(len(wire.ReqEnvelope{SubID: sub, Filters: []byte(`{"kinds":[9,7,5],"#h":[],"since":1800000000}`)}.Append(nil)))
	s.hTag = float64(len(ch) + 3)
	s.close = float64(len(wire.CloseEnvelope{SubID: sub}.Append(nil)))
	s.upgrade, s.upgradeReply = 260, 130 // an HTTP/1.1 upgrade request and its 101
	s.authChallenge = float64(len(wire.AuthEnvelope{Challenge: strings.Repeat("0", 32)}.Append(nil)))
	auth, err := keys.NewEvent(nostr.KindClientAuth, [][]string{{"relay", "wss://c0.example/"}, {"challenge", strings.Repeat("0", 32)}}, "", now)
	if err == nil {
		s.auth = float64(len(wire.AuthEnvelope{Event: auth.AppendJSON(nil)}.Append(nil)))
	}
	http, err := keys.NewEvent(nostr.KindHTTPAuth, [][]string{{"u", "https://c0.example/query"}, {"method", "POST"}, {"payload", strings.Repeat("0", 64)}}, "", now)
	if err == nil {
		// headers: Host, Content-Type, Authorization: Nostr <base64 event>, plus a filter body
		s.httpRequest = float64(180+base64.StdEncoding.EncodedLen(len(http.AppendJSON(nil)))) + 120
	}
	s.httpReply = 160 // status line and headers
	return s
}
