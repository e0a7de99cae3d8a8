package relay_test

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/modules/localrelay"
	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
)

// A client model's life in short: connect (connect + auth are recorded),
// subscribe to a channel (subscribe_eose recorded, live events timestamped
// on arrival), publish (publish recorded when its OK arrives), read over
// HTTP (http_query recorded). Every Result goes to the Sink the extension
// wires to the engine's metrics; here a SinkFunc prints them.
func Example() {
	lr, err := localrelay.New(localrelay.DefaultConfig())
	if err != nil {
		panic(err)
	}
	if err := lr.Start(context.Background()); err != nil {
		panic(err)
	}
	defer lr.Close()

	sink := relay.SinkFunc(func(r relay.Result) { fmt.Println(r.Op, r.Outcome) })
	keys := nostr.DeriveKeys("example-run", nostr.RoleHuman, 0)
	target := relay.Target{WSURL: lr.URLs().WS, HTTPURL: lr.URLs().HTTP}

	ctx := context.Background()
	c, err := relay.Connect(ctx, relay.Config{Target: target, Keys: keys, Sink: sink})
	if err != nil {
		panic(err) // an *relay.OpError: Result.Outcome says throttled or error
	}
	defer c.Close()

	live := make(chan time.Time, 1)
	_, _, err = c.SubscribeEOSE(ctx, []relay.Filter{{Kinds: []int{0}, Authors: []string{keys.PubKey()}}}, relay.SubOptions{
		// Runs on the connection's reader goroutine: record and return.
		OnEvent: func(ev *nostr.Event, at time.Time, isLive bool) {
			if isLive {
				live <- at
			}
		},
	})
	if err != nil {
		panic(err)
	}

	ev, _ := keys.NewEvent(0, nil, `{"name":"example"}`, time.Now())
	c.Publish(ctx, ev, relay.PublishOptions{}) // or PublishAsync for fire-and-settle-later
	<-live

	h, err := relay.NewHTTP(relay.HTTPConfig{Target: target, Keys: keys, Sink: sink})
	if err != nil {
		panic(err)
	}
	evs, _ := h.Query(ctx, []relay.Filter{{Kinds: []int{0}, Authors: []string{keys.PubKey()}}}, relay.CallOptions{})
	fmt.Println(len(evs), "event")

	// Output:
	// connect ok
	// auth ok
	// subscribe_eose ok
	// publish ok
	// http_query ok
	// 1 event
}
