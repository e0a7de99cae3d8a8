package relay

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// §2.1, §4.12: a valid NIP-OA tag on AUTH selects the agent tier.
func TestAgentTierRateLimit(t *testing.T) {
	r := startRelay(t, func(c *Config) {
		c.RateLimit = true
		c.HumanMessagesPerMin = 2
		c.AgentMessagesPerMin = 4
		c.WSFramesPerWindow = 1000
	})
	quota := regexp.MustCompile(`^rate-limited: quota exceeded; retry in [0-9]+s$`)
	publishN := func(c *wsClient, k *nostr.Keys, n int) (accepted int, last string) {
		for i := 0; i < n; i++ {
			ok, msg := c.publish(ev(t, k, 30078, "", []string{"d", "x" + string(rune('a'+i))}))
			if ok {
				accepted++
			}
			last = msg
		}
		return
	}
	human := authed(t, r, key("human"))
	if n, last := publishN(human, key("human"), 3); n != 2 || !quota.MatchString(last) {
		t.Fatalf("human: %d accepted, last %q", n, last)
	}
	agentKey, owner := key("agent"), key("owner")
	oa, err := nostr.AttestAgent(owner, agentKey.PubKey(), "")
	if err != nil {
		t.Fatal(err)
	}
	agent := dial(t, r)
	agent.auth(agentKey, oa)
	if n, last := publishN(agent, agentKey, 5); n != 4 || !quota.MatchString(last) {
		t.Fatalf("agent: %d accepted, last %q", n, last)
	}
	// Legacy relays answer a throttled COUNT with a NOTICE.
	lr := startRelay(t, func(c *Config) { c.RateLimit = true; c.WSFramesPerWindow = 1; c.LegacyRateLimitNotice = true })
	c := authed(t, lr, key("human"))
	c.send("COUNT", "c1", map[string]any{"kinds": []int{0}})
	c.read()
	c.send("COUNT", "c2", map[string]any{"kinds": []int{0}})
	if f := c.read(); str(f[0]) != "NOTICE" || !quota.MatchString(str(f[1])) {
		t.Fatalf("legacy throttled COUNT: %s", frameString(f))
	}
}

// §4.9: observer frames need the owner relation and are p-gated.
func TestObserverFrames(t *testing.T) {
	r := startRelay(t, nil)
	agentKey, owner, other := key("agent"), key("owner"), key("other")
	oa, _ := nostr.AttestAgent(owner, agentKey.PubKey(), "")
	agent := dial(t, r)
	agent.auth(agentKey, oa)
	own := authed(t, r, owner)
	own.req("obs", map[string]any{"kinds": []int{24200}, "#p": []string{owner.PubKey()}})
	oth := authed(t, r, other)
	oth.req("obs", map[string]any{"kinds": []int{24200}, "#p": []string{other.PubKey()}})

	cipher := strings.Repeat("A", 200)
	frame := ev(t, agentKey, 24200, cipher, []string{"p", owner.PubKey()}, []string{"agent", agentKey.PubKey()}, []string{"frame", "telemetry"})
	agent.mustPublish(frame)
	if e := own.nextEvent("obs", 2*time.Second); e == nil || e.ID != frame.ID {
		t.Fatal("owner did not receive the agent's frame")
	}
	if e := oth.nextEvent("obs", 300*time.Millisecond); e != nil {
		t.Fatal("a third party received the frame")
	}
	control := ev(t, owner, 24200, cipher, []string{"p", agentKey.PubKey()}, []string{"agent", agentKey.PubKey()}, []string{"frame", "control"})
	own.mustPublish(control)
	stranger := ev(t, other, 24200, cipher, []string{"p", owner.PubKey()}, []string{"agent", other.PubKey()}, []string{"frame", "telemetry"})
	if ok, reason := oth.publish(stranger); ok || reason != "restricted: observer frames require an owner relation" {
		t.Fatalf("frame without an owner relation: %v %q", ok, reason)
	}
}

// §1.1 item 7: a client that never reads is dropped after SlowClientGrace
// consecutive overflows of its send queue.
func TestSlowConsumerIsDropped(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.SendBuffer = 2; c.SlowClientGrace = 3 })
	alice := key("alice")
	pub := authed(t, r, alice)
	ch := pub.createChannel("big", "open")

	// A subscriber that reads its AUTH, OK and EOSE, then never reads again.
	addr := r.Addr()
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, n, _ string) (net.Conn, error) {
		var nd net.Dialer
		return nd.DialContext(ctx, n, addr)
	}}
	ws, _, err := d.Dial(r.URLs().WS+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, m, _ := ws.ReadMessage()
	var f []string
	json.Unmarshal(m, &f)
	slowKey := key("slow")
	auth := evAt(t, slowKey, 22242, time.Now(), "", []string{"relay", r.URLs().WS}, []string{"challenge", f[1]})
	b, _ := json.Marshal([]any{"AUTH", auth})
	ws.WriteMessage(websocket.TextMessage, b)
	ws.ReadMessage()
	b, _ = json.Marshal([]any{"REQ", "s", map[string]any{"kinds": []int{9}, "#h": []string{ch}, "limit": 0}})
	ws.WriteMessage(websocket.TextMessage, b)
	ws.ReadMessage()

	c := r.lookup(r.URLs().Host)
	connected := func() bool {
		c.connMu.Lock()
		defer c.connMu.Unlock()
		for k := range c.conns {
			if k.pubkeyIfAuthed() == slowKey.PubKey() {
				return true
			}
		}
		return false
	}
	big := strings.Repeat("x", 200<<10)
	for i := 0; i < 200 && connected(); i++ {
		pub.mustPublish(ev(t, alice, 9, big+string(rune('a'+i%26)), []string{"h", ch}))
	}
	waitfor.Within(5*time.Second, func() bool { return !connected() })
	if connected() {
		t.Fatal("a subscriber that never reads is still connected")
	}
	// The publisher is unaffected.
	pub.mustPublish(ev(t, alice, 9, "still here", []string{"h", ch}))
	if st := r.Stats(); st.SlowConsumers != 1 || st.DroppedDeliveries < 3 || st.Deliveries < 2 {
		t.Errorf("stats %+v", st)
	}
}

// A replay larger than the send buffer is delivered whole: the buffer
// bounds live fan-out, not replies to the client's own REQ.
func TestReplayLargerThanSendBuffer(t *testing.T) {
	r := startRelay(t, func(c *Config) { c.SendBuffer = 2 })
	alice := key("alice")
	c := authed(t, r, alice)
	ch := c.createChannel("t", "open")
	for i := 0; i < 30; i++ {
		c.send("EVENT", ev(t, alice, 9, strings.Repeat("m", i+1), []string{"h", ch}))
	}
	for i := 0; i < 30; i++ {
		c.expect("OK")
	}
	evs, reason := c.req("r", map[string]any{"kinds": []int{9}, "#h": []string{ch}}, map[string]any{"kinds": []int{39000, 39002}, "#h": []string{ch}})
	if reason != "" || len(evs) != 32 {
		t.Fatalf("replay: %d events, closed %q", len(evs), reason)
	}
}
