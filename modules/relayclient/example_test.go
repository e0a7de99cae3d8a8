package relayclient_test

import (
	"context"
	"fmt"
	"time"

	"github.com/buzzload/buzzload/modules/nostr"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
)

// A client model's life in short: connect (connect + auth are recorded),
// subscribe to a channel (subscribe_eose recorded, live events timestamped
// on arrival), publish (publish recorded when its OK arrives), read over
// HTTP (http_query recorded). Every Result goes to the Sink the extension
// wires to the engine's metrics; here a SinkFunc prints them.
func Example() {
	lr, err := relay.New(relay.DefaultConfig())
	if err != nil {
		panic(err)
	}
	if err := lr.Start(context.Background()); err != nil {
		panic(err)
	}
	defer lr.Close()

	sink := relayclient.SinkFunc(func(r relayclient.Result) { fmt.Println(r.Op, r.Outcome) })
	keys := nostr.DeriveKeys("example-run", nostr.RoleHuman, 0)
	target := relayclient.Target{WSURL: lr.URLs().WS, HTTPURL: lr.URLs().HTTP}

	ctx := context.Background()
	c, err := relayclient.Connect(ctx, relayclient.Config{Target: target, Keys: keys, Sink: sink})
	if err != nil {
		panic(err) // an *relayclient.OpError: Result.Outcome says throttled or error
	}
	defer c.Close()

	live := make(chan time.Time, 1)
	_, _, err = c.SubscribeEOSE(ctx, []relayclient.Filter{{Kinds: []int{0}, Authors: []string{keys.PubKey()}}}, relayclient.SubOptions{
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
	c.Publish(ctx, ev, relayclient.PublishOptions{}) // or PublishAsync for fire-and-settle-later
	<-live

	h, err := relayclient.NewHTTP(relayclient.HTTPConfig{Target: target, Keys: keys, Sink: sink})
	if err != nil {
		panic(err)
	}
	evs, _ := h.Query(ctx, []relayclient.Filter{{Kinds: []int{0}, Authors: []string{keys.PubKey()}}}, relayclient.CallOptions{})
	fmt.Println(len(evs), "event")

	// Output:
	// connect ok
	// auth ok
	// subscribe_eose ok
	// publish ok
	// http_query ok
	// 1 event
}
