package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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
func writeRunResult(path string, cfg engine.RunConfig, res engine.Result, rep *report.Report) error {
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
	if rep != nil {
		raw, err := json.Marshal(rep)
		if err != nil {
			return fmt.Errorf("result file %s: the Buzz report: %w", path, err)
		}
		f.Buzz = raw
	}
	// One path for every runner of a TestRun: each fills in its own id.
	path = strings.ReplaceAll(path, "{instance_id}", f.Run.InstanceID)
	if f.Run.ExecutionSegment == "" {
		return errors.New("result file " + path + ": not written, the run has no execution segment (it never planned)")
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
