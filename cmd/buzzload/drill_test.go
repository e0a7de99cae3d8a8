package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buzzload/buzzload/modules/report"
)

// A relay in a process of its own drilled by a declared [[drill]] whose
// command is `buzzload drill` (issue 42: a relay restarted by command is
// reported): the command's exit and output are in the report, and the
// clients' side counts the restart's closes, every client back.
func TestADrillCommandRestartsASeparateRelay(t *testing.T) {
	r := seedRelay(t)
	dir := t.TempDir()
	addr := r.Addr()
	bin := buzzloadBin(t)
	toml := fmt.Sprintf(`run_id = "drillcmd"
[target]
ws_url = "ws://%s"
http_url = "http://%s"
connect_addr = %q
community_host_template = "c{n}.{run}.test"
operator_key_env = "TEST_OP_KEY"
[shape]
communities = 1
channels_per_community = 2
history_messages_per_channel = 0
thread_roots_per_channel = 0
[population]
humans = 4
agents = 0
channels_per_member = 2
connect_rate_per_sec = 100
[human]
history_limit = 0
messages_per_hour = 3600
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 8
[[drill]]
at_secs = 3
kind = "restart"
command = [%q, "drill", "--kind", "restart", "--duration", "1s", "http://%s"]
`, addr, addr, addr, bin, addr)
	path := filepath.Join(dir, "drillcmd.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := r.OperatorKeys().SecretHex()
	env := []string{"TEST_OP_KEY=" + secret, "BUZZLOAD_OPERATOR_KEY=" + secret}
	page := filepath.Join(dir, "rep.html")
	code, out, errs := runBin(t, dir, env, "run", "-q", "--report", filepath.Join(dir, "rep.json"), "--report-html", page, path)
	raw, err := os.ReadFile(filepath.Join(dir, "rep.json"))
	if err != nil {
		t.Fatalf("exit %d, no report: %v\n%s\n%s", code, err, out, errs)
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Drills) != 1 {
		t.Fatalf("drills %+v\n%s", rep.Drills, out)
	}
	d := rep.Drills[0]
	if !d.Declared || d.Command == nil || d.Command.ExitCode != 0 || !strings.Contains(d.Command.Output, "restart performed") {
		t.Fatalf("drill %+v command %+v", d, d.Command)
	}
	if d.Closes["1012"] == 0 || d.Resubscribed != d.Affected || code != 0 {
		t.Fatalf("exit %d, drill %+v\n%s", code, d, out)
	}
	if strings.Contains(out+errs+string(raw), secret) {
		t.Fatal("the operator key was printed")
	}
	// The page: the drill's row and its band on the plots.
	ps := loadPage(t, page, "", 1600, 6000)
	if !strings.Contains(ps.dom, "<h2>Drills and disruptions</h2>") || !strings.Contains(ps.dom, `class="band drill"`) || !strings.Contains(ps.dom, "drill restart") {
		t.Errorf("the page lacks the drill's row or band")
	}
}

// A [[drill]] command in a distributed run runs once: the instance whose
// execution segment starts at 0 performs it, the others keep its window
// (their errors in it are the drill's) and say who did; merged, the drill
// is one, with the command's outcome. Fails without the rule: the command
// ran once per runner.
func TestACommandDrillRunsOnceAcrossRunners(t *testing.T) {
	r := seedRelay(t)
	dir := t.TempDir()
	addr := r.Addr()
	mark := filepath.Join(dir, "ran")
	toml := fmt.Sprintf(`run_id = "drillonce"
[target]
ws_url = "ws://%s"
http_url = "http://%s"
connect_addr = %q
community_host_template = "c{n}.{run}.test"
operator_key_env = "TEST_OP_KEY"
[shape]
communities = 1
channels_per_community = 1
history_messages_per_channel = 0
thread_roots_per_channel = 0
[population]
humans = 4
agents = 0
channels_per_member = 1
connect_rate_per_sec = 100
[human]
history_limit = 0
[[ramp]]
users = 1
ramp_secs = 0
hold_secs = 4
[[drill]]
at_secs = 1
kind = "mark"
command = ["sh", "-c", "echo ran >> %s"]
`, addr, addr, addr, mark)
	path := filepath.Join(dir, "drillonce.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TEST_OP_KEY=" + r.OperatorKeys().SecretHex()}
	if code, out, errs := runWith(t, env, "seed", "-q", path); code != 0 {
		t.Fatalf("seed: %d\n%s\n%s", code, out, errs)
	}
	segs := []string{"0:1/2", "1/2:1"}
	codes, errs := runTogether(t, env, dir, path, "0,1/2,1", segs, 3*time.Second)
	for i := range segs {
		if codes[i] != 0 {
			t.Fatalf("runner %d: exit %d\n%s", i, codes[i], errs[i])
		}
	}
	ran, _ := os.ReadFile(mark)
	if got := strings.Count(string(ran), "ran\n"); got != 1 {
		t.Fatalf("the drill's command ran %d times over two runners, want once", got)
	}
	code, out, merrs := runWith(t, nil, "merge", "-o", filepath.Join(dir, "merged.json"), filepath.Join(dir, "r0.json"), filepath.Join(dir, "r1.json"))
	if code != 0 {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, merrs)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "merged.json"))
	if err != nil {
		t.Fatal(err)
	}
	var merged struct {
		Buzz report.Report `json:"buzz"`
	}
	if err := json.Unmarshal(raw, &merged); err != nil {
		t.Fatal(err)
	}
	var declared []report.DrillReport
	for _, d := range merged.Buzz.Drills {
		if d.Declared {
			declared = append(declared, d)
		}
	}
	if len(declared) != 1 || declared[0].Command == nil || declared[0].Command.ExitCode != 0 || strings.Contains(declared[0].Note, "performed by") {
		t.Fatalf("merged drills %+v", merged.Buzz.Drills)
	}
}
