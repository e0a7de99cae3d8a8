package relay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/buzzload/buzzload/internal/waitfor"
	"github.com/buzzload/buzzload/modules/nostr"
)

// BenchmarkFanoutCPU: the relay's CPU per live delivery in a wide channel,
// on real loopback sockets, with the subscribers in a child process (this
// test binary, TestFanoutClientHelper) so only the relay's side (and one
// publisher's) is counted. Each subscriber holds the human model's live
// subscriptions (the channel REQ with two filters, a mentions REQ), and
// events are published fanoutGap apart: every connection gets one frame per
// publish, so no writer can batch, as in `scripts/scale-humans.sh wide`
// (frames 70 ms apart per connection). b.N is the number of publishes; use
// a fixed -benchtime such as 100x (each call connects the subscribers anew).
func BenchmarkFanoutCPU(b *testing.B) {
	const subs, fanoutGap = 2000, 30 * time.Millisecond
	r := benchRelay(b)
	owner := nostr.DeriveKeys("bench", nostr.RoleOwner, 2)
	pub := benchDial(b, r, owner)
	ch := newUUID()
	create, _ := owner.NewEvent(9007, [][]string{{"h", ch}, {"name", "wide"}}, "", time.Now())
	f, _ := json.Marshal([]any{"EVENT", create})
	pub.ws.WriteMessage(websocket.TextMessage, f)
	pub.ws.ReadMessage()

	cl := startFanoutClients(b, r, subs, ch)
	defer cl.stop()
	events := make([][]byte, b.N)
	for i := range events {
		e, _ := owner.NewEvent(9, [][]string{{"h", ch}}, fmt.Sprint("wide message ", i), time.Now())
		events[i], _ = json.Marshal([]any{"EVENT", e})
	}
	before := r.Stats().Deliveries
	cpu0 := processCPU()
	b.ResetTimer()
	next := time.Now()
	for _, fr := range events {
		time.Sleep(time.Until(next)) // the benchmark's pace: one event per gap
		next = next.Add(fanoutGap)
		pub.ws.WriteMessage(websocket.TextMessage, fr)
		pub.ws.ReadMessage() // the OK, queued once the fan-out is done
	}
	cl.await(b, int64(b.N)*subs)
	b.StopTimer()
	cpu := processCPU().Sub(cpu0)
	if got := r.Stats().Deliveries - before; got != int64(b.N)*subs {
		b.Fatalf("relay counted %d deliveries, want %d", got, int64(b.N)*subs)
	}
	n := float64(int64(b.N) * subs)
	b.ReportMetric(float64((cpu.user+cpu.sys).Nanoseconds())/1e3/n, "cpu-µs/delivery")
	b.ReportMetric(float64(cpu.sys.Nanoseconds())/1e3/n, "sys-µs/delivery")
}

type cpuTimes struct{ user, sys time.Duration }

func (a cpuTimes) Sub(b cpuTimes) cpuTimes { return cpuTimes{a.user - b.user, a.sys - b.sys} }

// processCPU is this process's user and system CPU time so far.
func processCPU() cpuTimes {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpuTimes{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())}
}

type fanoutClients struct {
	cmd   *exec.Cmd
	stdin interface{ Write([]byte) (int, error) }
	out   *bufio.Reader
	stop  func()
}

// startFanoutClients starts n subscribers of channel ch in a child process
// and returns once all have their EOSE.
func startFanoutClients(b *testing.B, r *Relay, n int, ch string) *fanoutClients {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFanoutClientHelper$")
	cmd.Env = append(os.Environ(), "LOCALRELAY_FANOUT_CLIENT="+r.URLs().WS, "LOCALRELAY_FANOUT_N="+strconv.Itoa(n), "LOCALRELAY_FANOUT_CHANNEL="+ch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &fanoutClients{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	c.stop = func() {
		stdin.Close()
		_ = cmd.Wait()
	}
	if line, err := c.out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		c.stop()
		b.Fatalf("fan-out client helper: %q %v %s", line, err, stderr.String())
	}
	return c
}

// await returns once the clients have read want live events in all.
func (c *fanoutClients) await(b *testing.B, want int64) {
	b.Helper()
	fmt.Fprintln(c.stdin, want)
	if line, err := c.out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "ok") {
		b.Fatalf("fan-out client helper: %q %v", line, err)
	}
}

// TestFanoutClientHelper is the subscriber side of BenchmarkFanoutCPU, run
// in a child process; it skips in a normal test run. Each line on stdin is a
// total of live events to wait for; it answers "ok" once read (or "short N"
// after 30 s).
func TestFanoutClientHelper(t *testing.T) {
	u := os.Getenv("LOCALRELAY_FANOUT_CLIENT")
	if u == "" {
		t.Skip("helper process for BenchmarkFanoutCPU")
	}
	n, _ := strconv.Atoi(os.Getenv("LOCALRELAY_FANOUT_N"))
	ch := os.Getenv("LOCALRELAY_FANOUT_CHANNEL")
	var got atomic.Int64
	var wg sync.WaitGroup
	conns := make([]*websocket.Conn, 0, n)
	for i := 0; i < n; i++ {
		k := nostr.DeriveKeys("fanout", nostr.RoleHuman, i)
		ws := dialAuthed(t, u, 1024, k)
		// The human model's live subscriptions (modules/models/human.go).
		reqs := [][]any{
			{"REQ", "c", map[string]any{"kinds": []int{nostr.KindStreamMessage}, "#h": []string{ch}, "limit": 0}, map[string]any{"kinds": []int{nostr.KindTyping}, "#h": []string{ch}, "limit": 0}},
			{"REQ", "m", map[string]any{"kinds": []int{nostr.KindStreamMessage}, "#h": []string{ch}, "#p": []string{k.PubKey()}, "limit": 0}},
		}
		for _, req := range reqs {
			b, _ := json.Marshal(req)
			ws.WriteMessage(websocket.TextMessage, b)
			if _, msg, err := ws.ReadMessage(); err != nil || !strings.HasPrefix(string(msg), `["EOSE"`) {
				t.Fatalf("REQ: %s %v", msg, err)
			}
		}
		conns = append(conns, ws)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					return
				}
				if bytes.HasPrefix(msg, []byte(`["EVENT"`)) {
					got.Add(1)
				}
			}
		}()
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		want, _ := strconv.ParseInt(in.Text(), 10, 64)
		waitfor.Within(30*time.Second, func() bool { return got.Load() >= want })
		if g := got.Load(); g < want {
			fmt.Println("short", g)
		} else {
			fmt.Println("ok")
		}
	}
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
}
