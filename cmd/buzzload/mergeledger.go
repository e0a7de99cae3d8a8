package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/modules/ledger"
	"github.com/buzzload/buzzload/modules/report"
)

// joinLedgers is the delivery ledger of a distributed run: every runner's
// journal (beside its result file, named in its report's ledger) replayed
// as one ledger (modules/ledger Replay), so a message published on one
// runner and due to members on others is judged once. nil, with the
// reason, when some runner has no ledger or no journal: the merge then
// adds the runners' own ledgers, which judge only the pairs within each.
func joinLedgers(ins []result.Input, reps []*report.Report) (*report.LedgerReport, string) {
	var names []string
	var files []io.Reader
	defer func() {
		for _, f := range files {
			f.(*os.File).Close()
		}
	}()
	for i, r := range reps {
		lg := r.Ledger
		switch {
		case lg == nil:
			return nil, ins[i].Name + " has no delivery ledger"
		case lg.Journal == "":
			return nil, ins[i].Name + " wrote no ledger journal"
		}
		path := filepath.Join(filepath.Dir(ins[i].Name), filepath.Base(lg.Journal))
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Sprintf("%s: its ledger journal: %v", ins[i].Name, err)
		}
		names, files = append(names, path), append(files, f)
	}
	first := reps[0].Ledger
	cfg := ledger.Config{Sample: first.Sample, MaxLost: first.MaxLost,
		Patience: time.Duration(first.PatienceMs * 1e6), Due: time.Duration(first.DueMs * 1e6)}
	steps := reps[0].Steps
	stepOf := func(off time.Duration) string {
		for _, st := range steps {
			if off.Seconds() < st.EndS {
				return strconv.Itoa(st.Index)
			}
		}
		return report.ShutdownStep
	}
	joined, err := ledger.Replay(cfg, stepOf, names, files)
	if err != nil {
		return nil, "the runners' ledger journals could not be joined: " + err.Error()
	}
	joined.Joined = len(reps)
	return joined, ""
}
