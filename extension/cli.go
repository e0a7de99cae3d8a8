package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/buzzload/buzzload/engine/outfile"
	"github.com/buzzload/buzzload/modules/k6options"
	"github.com/buzzload/buzzload/modules/report"
)

// StandardScript is the script `buzzload run scenario.toml` runs: the
// standard shape of scenarios/local-smoke.js (seed in setup, one ramping-vus
// scenario per population, the Buzz report in handleSummary) for the
// scenario file at path, relative to the script. Its report's JSON goes only
// where --report says.
func StandardScript(path string) []byte {
	q, _ := json.Marshal(path)
	var b strings.Builder
	b.WriteString("// The standard script of `buzzload run <scenario>.toml` (extension.StandardScript).\n")
	b.WriteString("import buzz from \"k6/x/buzz\";\n")
	fmt.Fprintf(&b, "const sc = buzz.load(%s);\n", q)
	b.WriteString("export const options = sc.options();\n")
	b.WriteString("export function setup() { return sc.setup(); }\n")
	for _, p := range k6options.Populations {
		fmt.Fprintf(&b, "export function %s() { sc.%s(); }\n", p.Exec, p.Exec)
	}
	b.WriteString("export function teardown() { sc.teardown(); }\n")
	b.WriteString("export function handleSummary(data) { return sc.report(data, { json: \"\" }); }\n")
	return []byte(b.String())
}

// writeReport writes one report file and remembers how it went, so a
// report that cannot be written fails the run (FinishReports) instead of
// being lost.
func (m *Module) writeReport(path string, data []byte) error {
	// A temporary file renamed into place: a failed write (a full disk)
	// leaves the previous report whole (issue 43 L1).
	err := outfile.Replace(path, data, 0o644)
	m.failMu.Lock()
	defer m.failMu.Unlock()
	if err != nil {
		err = fmt.Errorf("writing the Buzz report: %w", err)
		m.reportErrs = append(m.reportErrs, err)
		return err
	}
	m.reports = append(m.reports, path)
	return nil
}

// FinishReports is called once the run is over. With a report path
// (--report) and no sc.report call (no handleSummary, --summary-mode=disabled, a
// custom script), it builds the report of the run's scenario and writes
// it there. It returns every report file that could not be written.
func (m *Module) FinishReports() error {
	m.failMu.Lock()
	wrote := len(m.reports) + len(m.reportErrs)
	m.failMu.Unlock()
	if m.opts.ReportPath != "" && wrote == 0 {
		ls := m.loadedScenarios()
		switch {
		case len(ls) == 0:
			m.noteReportErr(fmt.Errorf("--report %s: the script loaded no scenario (buzz.load)", m.opts.ReportPath))
		case len(ls) > 1:
			m.noteReportErr(fmt.Errorf("--report %s: the script loaded %d scenarios; call sc.report in handleSummary for each", m.opts.ReportPath, len(ls)))
		default:
			rep := ls[0].BuildReport(nil)
			m.keepReport(rep)
			raw, err := json.MarshalIndent(rep, "", "  ")
			if err == nil {
				_ = m.writeReport(m.opts.ReportPath, append(raw, '\n'))
			} else {
				m.noteReportErr(err)
			}
		}
	}
	m.failMu.Lock()
	defer m.failMu.Unlock()
	return errors.Join(m.reportErrs...)
}

func (m *Module) noteReportErr(err error) {
	m.failMu.Lock()
	m.reportErrs = append(m.reportErrs, err)
	m.failMu.Unlock()
}

// keepReport remembers the last report built, for LastReport.
func (m *Module) keepReport(r *report.Report) {
	m.failMu.Lock()
	m.lastReport = r
	m.failMu.Unlock()
}

// LastReport is the Buzz report of the run, for the result file and
// --report-html: the last one sc.report built, else (a custom script, no
// handleSummary) the report of the one scenario the script loaded; nil when
// it loaded none or several.
func (m *Module) LastReport() *report.Report {
	m.failMu.Lock()
	r := m.lastReport
	m.failMu.Unlock()
	if r != nil {
		return r
	}
	m.mu.Lock()
	var one *loaded
	seen := map[*loaded]bool{}
	for _, l := range m.scenarios {
		seen[l], one = true, l
	}
	m.mu.Unlock()
	if len(seen) != 1 {
		return nil
	}
	r = one.BuildReport(nil)
	m.keepReport(r)
	return r
}

// loadedScenarios lists the scenarios the script loaded, each once (the map
// holds one per buzz.load key).
func (m *Module) loadedScenarios() []*loaded {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*loaded]bool{}
	var ls []*loaded
	for _, l := range m.scenarios {
		if !seen[l] {
			seen[l] = true
			ls = append(ls, l)
		}
	}
	return ls
}
