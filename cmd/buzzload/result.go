package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/buzzload/buzzload/engine"
	"github.com/buzzload/buzzload/engine/result"
	"github.com/buzzload/buzzload/modules/report"
)

// resultGroupBy is the grouping `run --result` adds to every metric, so
// `buzzload compare` finds each operation's own sinks (the op tag of the
// buzz_op_* metrics).
var resultGroupBy = [][]string{{"op"}}

// writeRunResult writes the result file of a finished `buzzload run`
// (engine/result). It is written whatever the exit code, as long as the
// run got as far as loading the script.
func writeRunResult(path string, cfg engine.RunConfig, res engine.Result, rep *report.Report, journal string) error {
	if journal != "" {
		defer os.Remove(journal) // moved beside the result file below, or not wanted
	}
	if res.Summary == nil || res.Info == nil {
		return fmt.Errorf("result file %s: not written, the run ended before the script loaded (exit code %d)", path, res.ExitCode)
	}
	info := res.Info
	f := &result.File{
		Run: result.Run{
			Script:                   cfg.Script,
			ScriptSHA256:             scriptHash(cfg),
			InstanceID:               instanceID(info.Options.Tags),
			Start:                    info.Start,
			End:                      info.End,
			ExecutionSegment:         info.Segment,
			ExecutionSegmentSequence: info.Sequence,
			ExitCode:                 res.ExitCode,
		},
		Options: result.Options{
			Thresholds:        info.Options.Thresholds,
			NoThresholds:      cfg.NoThresholds,
			SummaryTrendStats: info.Options.SummaryTrendStats,
			SummaryTimeUnit:   info.Options.SummaryTimeUnit,
			SummaryMode:       cfg.SummaryMode,
			Test:              info.MergedOptions,
		},
		Metrics:       res.Summary,
		Thresholds:    result.Results(res.Thresholds),
		StageVerdicts: result.FromVerdicts(info.StageVerdicts),
		SetupData:     info.SetupData,
		Outputs:       res.Outputs,
	}
	// One path for every runner of a TestRun: each fills in its own id.
	path = strings.ReplaceAll(path, "{instance_id}", f.Run.InstanceID)
	if f.Run.ExecutionSegment == "" {
		return errors.New("result file " + path + ": not written, the run has no execution segment (it never planned)")
	}
	if rep != nil {
		if journal != "" && rep.Ledger != nil {
			dst := path + ".ledger"
			if err := moveFile(journal, dst); err != nil {
				return fmt.Errorf("result file %s: the ledger's journal: %w", path, err)
			}
			lg := *rep.Ledger
			lg.Journal = filepath.Base(dst)
			cp := *rep
			cp.Ledger = &lg
			rep = &cp
		}
		raw, err := json.Marshal(rep)
		if err != nil {
			return fmt.Errorf("result file %s: the Buzz report: %w", path, err)
		}
		f.Buzz = raw
	}
	if res.Err != nil && res.ExitCode != engine.ExitOK {
		f.Run.Error = res.Err.Error()
	}
	return result.Write(path, f)
}

// scriptHash hashes the entry script, so merge can tell two versions of a
// script with the same name apart. Empty when it cannot be read.
func scriptHash(cfg engine.RunConfig) string {
	src := cfg.Source
	if src == nil {
		b, err := os.ReadFile(cfg.Script)
		if err != nil {
			return ""
		}
		src = b
	}
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// instanceID is the instance_id tag k6-operator gives each runner, or the
// host name and process id.
func instanceID(tags map[string]string) string {
	if id := tags["instance_id"]; id != "" {
		return id
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// journalDir is where a run writing result writes its ledger journal
// until the end: the result file's directory (one rename away), or the
// temporary directory when that is not known yet ({instance_id}).
func journalDir(result string) string {
	dir := filepath.Dir(result)
	if strings.Contains(dir, "{") {
		return os.TempDir()
	}
	return dir
}

// moveFile renames src to dst, or copies it across file systems.
func moveFile(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
