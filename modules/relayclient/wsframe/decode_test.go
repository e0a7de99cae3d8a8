package wsframe

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/gorilla/websocket"
)

func TestMatchesGorilla(t *testing.T) {
	for _, wb := range []int{4096, 64} { // 64: gorilla fragments every message over 64 bytes
		stream := serverStream(t, wb, theScript)
		want := gorillaEvents(t, stream)
		if len(want) < 20 || !strings.HasPrefix(want[len(want)-1], "close 4001") {
			t.Fatalf("oracle read %d events: %q", len(want), want)
		}
		rng := rand.New(rand.NewPCG(1, uint64(wb)))
		splits := map[string][]int{"whole": nil, "bytewise": nil}
		for i := 1; i < len(stream); i++ {
			splits["bytewise"] = append(splits["bytewise"], i)
		}
		for k := 0; k < 5; k++ {
			var cuts []int
			for i := 0; i < len(stream); i += 1 + rng.IntN(3000) {
				cuts = append(cuts, i)
			}
			splits["random"+string(rune('0'+k))] = cuts
		}
		for name, cuts := range splits {
			got, err := decodeEvents(t, &Decoder{}, stream, cuts)
			if err != nil {
				t.Fatalf("buffer %d, %s: %v", wb, name, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("buffer %d, %s:\n got %q\nwant %q", wb, name, got, want)
			}
		}
	}
}

// A whole message in the input is handed out in place: no copy, no
// allocation, nothing carried.
func TestWholeMessagesAreNotCopied(t *testing.T) {
	stream := serverStream(t, 4096, func(ws *websocket.Conn) error {
		for i := 0; i < 50; i++ {
			if err := ws.WriteMessage(websocket.TextMessage, text(200+i*20, i)); err != nil {
				return err
			}
			if i%10 == 0 {
				if err := ws.WriteControl(websocket.PingMessage, []byte("p"), deadline()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	var d Decoder
	d.Limit = 1 << 20
	msgs := 0
	allocs := testing.AllocsPerRun(20, func() {
		d.Push(stream)
		for {
			ev, ok, err := d.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if ev.Op == OpText {
				msgs++
			}
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(stream)))
			if p := uintptr(unsafe.Pointer(unsafe.SliceData(ev.Data))); len(ev.Data) > 0 && (p < lo || p >= lo+uintptr(len(stream))) {
				t.Fatalf("%s payload copied", ev.Op)
			}
		}
		if d.Buffered() != 0 {
			t.Fatalf("%d bytes carried", d.Buffered())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per stream", allocs)
	}
	if msgs != 21*50 {
		t.Fatalf("%d messages", msgs)
	}
}

func frame(b0 byte, payload []byte) []byte {
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, byte(n))
	case n < 1<<16:
		out = append(out, 126, byte(n>>8), byte(n))
	default:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	return append(out, payload...)
}

func TestProtocolErrors(t *testing.T) {
	ok := frame(0x81, []byte("fine"))
	for _, tc := range []struct {
		name   string
		stream []byte
		want   string
	}{
		{"masked", []byte{0x81, 0x84, 1, 2, 3, 4, 'a', 'b', 'c', 'd'}, "masked text frame"},
		{"rsv1", frame(0xC1, []byte("x")), "reserved bits set (0x40)"},
		{"rsv3", frame(0x91, []byte("x")), "reserved bits"},
		{"opcode 3", frame(0x83, nil), "bad opcode 3"},
		{"opcode 11", frame(0x8B, nil), "bad opcode 11"},
		{"long ping", frame(0x89, text(126, 0)), "ping frame of 126 bytes"},
		{"fragmented ping", frame(0x09, []byte("x")), "fragmented ping frame"},
		{"fragmented close", frame(0x08, nil), "fragmented close frame"},
		{"stray continuation", frame(0x80, []byte("x")), "continuation frame without a message"},
		{"text inside fragmented", append(frame(0x01, []byte("a")), frame(0x81, []byte("b"))...), "new text message before the fragmented text"},
		{"64-bit high bit", []byte{0x81, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, "most significant bit"},
		{"1-byte close", frame(0x88, []byte{3}), "1-byte body"},
		{"close 1005", frame(0x88, []byte{0x03, 0xED}), "bad close code 1005"},
		{"close 999", frame(0x88, []byte{0x03, 0xE7}), "bad close code 999"},
		{"close bad utf8", frame(0x88, []byte{0x03, 0xE8, 0xff, 0xfe}), "not valid UTF-8"},
	} {
		stream := append(append([]byte(nil), ok...), tc.stream...)
		for _, bytewise := range []bool{false, true} {
			var cuts []int
			if bytewise {
				for i := 1; i < len(stream); i++ {
					cuts = append(cuts, i)
				}
			}
			d := &Decoder{}
			got, err := decodeEvents(t, d, stream, cuts)
			var pe *ProtocolError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s (bytewise %v): err = %v, want one containing %q", tc.name, bytewise, err, tc.want)
			}
			if len(got) != 1 || got[0] != `text "fine"` {
				t.Fatalf("%s: events before the error %q", tc.name, got)
			}
			// Sticky.
			d.Push(ok)
			if _, _, err2 := d.Next(); err2 != err {
				t.Fatalf("%s: error not sticky: %v", tc.name, err2)
			}
		}
	}
}

func TestTooBigIsDiscardedAndTheStreamGoesOn(t *testing.T) {
	big := text(5000, 1)
	stream := serverStream(t, 4096, func(ws *websocket.Conn) error {
		if err := ws.WriteMessage(websocket.TextMessage, big); err != nil {
			return err
		}
		if err := fragmented(ws, websocket.TextMessage, [][]byte{big[:600], big[600:1200], big[1200:]}, 1); err != nil {
			return err
		}
		// Exactly at the limit: kept whole.
		if err := ws.WriteMessage(websocket.TextMessage, big[:1000]); err != nil {
			return err
		}
		return ws.WriteMessage(websocket.TextMessage, []byte("after"))
	})
	for _, step := range []int{0, 1, 7, 999} {
		var cuts []int
		for i := step; step > 0 && i < len(stream); i += step {
			cuts = append(cuts, i)
		}
		d := &Decoder{Limit: 1000}
		d.Push(nil)
		var evs []Event
		prev := 0
		for _, cut := range append(cuts, len(stream)) {
			d.Push(stream[prev:cut])
			prev = cut
			for {
				ev, ok, err := d.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				ev.Data = append([]byte(nil), ev.Data...)
				evs = append(evs, ev)
			}
			if d.Buffered() > int(d.Limit)+125+14 { // never the 5000 bytes
				t.Fatalf("step %d: %d bytes carried for a discarded message", step, d.Buffered())
			}
		}
		if len(evs) != 5 {
			t.Fatalf("step %d: %d events", step, len(evs))
		}
		for i, ev := range evs[:2] {
			if i == 1 {
				ev = evs[2] // evs[1] is the ping between the fragments
				if evs[1].Op != OpPing {
					t.Fatalf("step %d: %+v", step, evs[1])
				}
			}
			if !ev.TooBig || ev.Len != 5000 || string(ev.Data) != string(big[:KeepTooBig]) {
				t.Fatalf("step %d: message %d: too big %v len %d data %d bytes", step, i, ev.TooBig, ev.Len, len(ev.Data))
			}
		}
		if evs[3].TooBig || string(evs[3].Data) != string(big[:1000]) || string(evs[4].Data) != "after" {
			t.Fatalf("step %d: after the big ones: %+v %q", step, evs[3].TooBig, evs[4].Data)
		}
	}
}

// FuzzDecoder: arbitrary input never panics, and decodes the same however
// it is split; a valid stream built by gorilla from the input decodes as
// gorilla reads it, split at random points.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0x81, 3, 'a', 'b', 'c'}, uint64(1))
	f.Add([]byte{0, 200, 1, 7, 2, 30, 3, 4, 1, 250, 9}, uint64(7))
	f.Add([]byte{4, 90, 0, 255, 255, 2, 125, 1, 30, 30}, uint64(99))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 0))
		cutsOf := func(n int) []int {
			var cuts []int
			for i := 0; i < n; i += 1 + rng.IntN(64) {
				cuts = append(cuts, i)
			}
			return cuts
		}
		whole, werr := decodeEvents(t, &Decoder{Limit: 4096}, data, nil)
		split, serr := decodeEvents(t, &Decoder{Limit: 4096}, data, cutsOf(len(data)))
		if !slices.Equal(whole, split) || (werr == nil) != (serr == nil) {
			t.Fatalf("whole %q %v, split %q %v", whole, werr, split, serr)
		}

		stream := serverStream(t, 128, func(ws *websocket.Conn) error { return scriptFrom(ws, data) })
		want := gorillaEvents(t, stream)
		got, err := decodeEvents(t, &Decoder{}, stream, cutsOf(len(stream)))
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("got %q %v\nwant %q", got, err, want)
		}
	})
}

// scriptFrom turns fuzz bytes into a valid server script: messages of
// several sizes, fragmented ones with control frames between fragments.
func scriptFrom(ws *websocket.Conn, data []byte) error {
	for i := 0; i+1 < len(data); i += 2 {
		op, n := data[i]%6, int(data[i+1])
		var err error
		switch op {
		case 0:
			err = ws.WriteMessage(websocket.TextMessage, text(n*n, i))
		case 1:
			err = ws.WriteMessage(websocket.BinaryMessage, text(n, i))
		case 2:
			err = ws.WriteControl(websocket.PingMessage, text(n%126, i), deadline())
		case 3:
			err = ws.WriteControl(websocket.PongMessage, text(n%126, i), deadline())
		case 4:
			var pieces [][]byte
			for k := 0; k < 1+n%5; k++ {
				pieces = append(pieces, text((n*(k+3))%700, i+k))
			}
			err = fragmented(ws, websocket.TextMessage, pieces, n%4)
		case 5:
			return ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(1000+n%2, string(text(n%100, i))), deadline())
		}
		if err != nil {
			return err
		}
	}
	return nil
}
