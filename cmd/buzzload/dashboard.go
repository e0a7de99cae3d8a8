package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/buzzload/buzzload/engine/output/webdashboard"
	"github.com/buzzload/buzzload/engine/termtext"
	"github.com/buzzload/buzzload/extension"
)

// takeDashboard takes `--out web-dashboard[=ARGS]` out of the outputs the
// engine makes (this command owns its server and its end: the export
// carries the Buzz report, built after the outputs stop), or turns
// K6_WEB_DASHBOARD=true into one, as k6 does. At most one.
func takeDashboard(outs []string, environ []string) ([]string, *webdashboard.Config, error) {
	env := envMap(environ)
	var rest []string
	var arg *string
	for _, o := range outs {
		kind, a, _ := strings.Cut(o, "=")
		if kind != webdashboard.Name {
			rest = append(rest, o)
			continue
		}
		if arg != nil {
			return nil, nil, optErr("--out %s given twice", webdashboard.Name)
		}
		arg = &a
	}
	if arg == nil {
		if !webdashboard.Enabled(env) {
			return rest, nil, nil
		}
		arg = new(string)
	}
	c, err := webdashboard.Parse(*arg, env)
	if err != nil {
		return nil, nil, optErr("%w", err)
	}
	return rest, &c, nil
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// finishDashboard ends the dashboard after the run: the export and the
// live pages get the run's Buzz report when it has one.
func finishDashboard(d *webdashboard.Dashboard, buzz *extension.Module, stderr io.Writer) error {
	var raw json.RawMessage
	if rep := buzz.LastReport(); rep != nil {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		raw = b
	}
	if err := d.Finish(raw); err != nil {
		fmt.Fprintf(stderr, "buzzload run: %s\n", termtext.Lines(err.Error()))
		return err
	}
	return nil
}
