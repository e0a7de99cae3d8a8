// The lifecycle functions setup, teardown and handleSummary, each in a fresh VU 0.

package jshost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// runLifecycle runs setup/teardown/handleSummary in a fresh VU 0 with a
// timeout. tagGroup is "::setup"/"::teardown" or "" (no samples expected).
func (b *Bundle) runLifecycle(ctx context.Context, name string, phase jsmodule.Phase, timeout time.Duration, args func(*VU) ([]sobek.Value, error)) (sobek.Value, *VU, error) {
	vu, err := b.newVU(ctx, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	tags := jsmodule.NewTagMap(b.lifecycleTags())
	vu.sys = b.systemTags()
	if (phase == jsmodule.PhaseSetup || phase == jsmodule.PhaseTeardown) && vu.sys.Group {
		tags.Set("group", "::"+name)
	}
	vu.state = &jsmodule.State{Tags: tags, Metadata: jsmodule.NewTagMap(nil), Group: "::" + name, Phase: phase, Stage: -1}
	fn, ok := sobek.AssertFunction(vu.exportValue(name))
	if !ok {
		vu.Close()
		return nil, nil, fmt.Errorf("%s is not an exported function", name)
	}
	a, err := args(vu)
	if err != nil {
		vu.Close()
		return nil, nil, err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errLifecycleTimeout)
	defer cancel()
	ret, err := vu.callFn(cctx, fn, a...)
	if phase != jsmodule.PhaseSummary {
		vu.emitData(time.Now())
	}
	if err != nil {
		if errors.Is(context.Cause(cctx), errLifecycleTimeout) {
			vu.Close()
			te := &TimeoutError{Phase: name, Timeout: timeout}
			var at *interruptedAt
			if errors.As(err, &at) {
				te.Where = strings.TrimSpace(at.where)
			}
			return nil, nil, te
		}
		var ab *AbortError
		if errors.As(err, &ab) {
			vu.Close()
			return nil, nil, ab
		}
		vu.Close()
		return nil, nil, &ScriptError{Phase: name, Err: err}
	}
	return ret, vu, nil
}

var errLifecycleTimeout = errors.New("lifecycle timeout")

// RunSetup calls setup() (if exported) and returns its result as JSON, nil
// for undefined. The JSON comes from Go's encoder, as in k6 (spec §1.3).
func (b *Bundle) RunSetup(ctx context.Context, timeout time.Duration) ([]byte, error) {
	if !b.HasExport("setup") {
		return nil, nil
	}
	ret, vu, err := b.runLifecycle(ctx, "setup", jsmodule.PhaseSetup, timeout, func(*VU) ([]sobek.Value, error) { return nil, nil })
	if err != nil {
		return nil, err
	}
	defer vu.Close()
	if ret == nil || sobek.IsUndefined(ret) {
		return nil, nil
	}
	raw, err := json.Marshal(ret.Export())
	if err != nil {
		return nil, fmt.Errorf("error marshaling setup() data to JSON: %w", err)
	}
	return raw, nil
}

// RunTeardown calls teardown(data) (if exported) with a fresh decode of data.
func (b *Bundle) RunTeardown(ctx context.Context, timeout time.Duration, data []byte) error {
	if !b.HasExport("teardown") {
		return nil
	}
	_, vu, err := b.runLifecycle(ctx, "teardown", jsmodule.PhaseTeardown, timeout, func(vu *VU) ([]sobek.Value, error) {
		d, err := vu.decode(data)
		return []sobek.Value{d}, err
	})
	if vu != nil {
		vu.Close()
	}
	return err
}

// SummaryOutput is one destination handleSummary returned.
type SummaryOutput struct {
	// Dest is "stdout", "stderr" or a file path.
	Dest string
	Data []byte
}

// RunHandleSummary calls handleSummary(data) where data is the summary JSON
// with setup_data added. ok is false when the default summary should be
// printed: handleSummary is not exported or returned null/undefined.
func (b *Bundle) RunHandleSummary(ctx context.Context, timeout time.Duration, summaryJSON, setupData []byte) (outs []SummaryOutput, ok bool, err error) {
	if !b.HasExport("handleSummary") {
		// k6 v2.2.0 initialises a fresh VU 0 for the end-of-test summary
		// whether or not the script exports handleSummary (observed: a
		// script's init runs three times for one VU, twice with the
		// summary disabled): its init side effects happen as in k6.
		if vu, err := b.newVU(ctx, 0, 0); err == nil {
			vu.Close()
		}
		return nil, false, nil
	}
	ret, vu, err := b.runLifecycle(ctx, "handleSummary", jsmodule.PhaseSummary, timeout, func(vu *VU) ([]sobek.Value, error) {
		d, err := vu.decode(summaryJSON)
		if err != nil {
			return nil, err
		}
		if o, isObj := d.(*sobek.Object); isObj && setupData != nil {
			sd, err := vu.decode(setupData)
			if err != nil {
				return nil, err
			}
			_ = o.Set("setup_data", sd)
		}
		return []sobek.Value{d}, nil
	})
	if err != nil {
		return nil, false, err
	}
	defer vu.Close()
	if ret == nil || sobek.IsUndefined(ret) || sobek.IsNull(ret) {
		return nil, false, nil
	}
	obj, isObj := ret.(*sobek.Object)
	if !isObj {
		return nil, false, fmt.Errorf("handleSummary() must return an object, got %s", ret.String())
	}
	for _, k := range obj.Keys() {
		val := obj.Get(k)
		switch x := val.Export().(type) {
		case string:
			outs = append(outs, SummaryOutput{Dest: k, Data: []byte(x)})
		case sobek.ArrayBuffer:
			outs = append(outs, SummaryOutput{Dest: k, Data: append([]byte(nil), x.Bytes()...)})
		default:
			return nil, false, fmt.Errorf("handleSummary(): the value for %q must be a string or an ArrayBuffer, got %s", k, typeName(val))
		}
	}
	return outs, true, nil
}
