package extension

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mstoykov/envconfig"

	"github.com/buzzload/buzzload/engine/configerr"
	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/metrics"
	"github.com/buzzload/buzzload/engine/segment"
	"github.com/buzzload/buzzload/modules/expect"
	"github.com/buzzload/buzzload/modules/logscan"
	"github.com/buzzload/buzzload/modules/relay"
	"github.com/buzzload/buzzload/modules/relayclient"
	"github.com/buzzload/buzzload/modules/relaymetrics"
	"github.com/buzzload/buzzload/modules/report"
	"github.com/buzzload/buzzload/modules/scenario"
)

// ImportPath is where scripts import the module from.
const ImportPath = "k6/x/buzz"

// Version of the module's JS API (xk6.yaml).
const Version = "0.1.0"

// Options configure the module of one run.
type Options struct {
	// Registry is the registry the module is registered in. It is not
	// needed any more (the VU gives the scenario start and the test
	// options) and is accepted for callers that pass it.
	Registry *jsmodule.Registry
	// LookupEnv reads BUZZ_* settings of the embedded relay (the variables
	// of `buzzload relay`); nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Relay, when set, adjusts the embedded relay's config after the
	// environment (tests lower limits here).
	Relay func(*relay.Config)
	// OnRelay sees the embedded relay once it listens (tests inject faults).
	OnRelay func(*relay.Relay)

	// The options of `buzzload run` (cmd/buzzload/buzz.go).
	//
	// MemoryAvailable, when set, is the memory the run may use: a scenario
	// whose shape needs more is refused at buzz.load (run sets it; inspect
	// and archive, which load no data, do not).
	MemoryAvailable func() uint64
	// Shard is the default shard of every buzz.load without one (--shard).
	Shard scenario.Shard
	// ReportPath, when set, is where the Buzz report's JSON goes (--report),
	// whatever sc.report's json option says.
	ReportPath string
	// LedgerJournalDir, when set, makes the delivery ledger write its
	// journal (modules/ledger) into a file there, which the caller takes
	// with TakeLedgerJournal (--result: beside the result file, for merge).
	LedgerJournalDir string
	// ReportInterval is how often a window block is printed while the run
	// goes (--report-interval); 0 picks 10 s for runs under 10 minutes and
	// 60 s above, negative prints none (the windows still go into the report).
	ReportInterval time.Duration
	// Warmup, when set, replaces [abort] warmup_secs (--warmup).
	Warmup *time.Duration
	// Duration, when set, is every loaded scenario's length (run -d of a
	// .toml: Scenario.SetDuration cuts or lengthens its ramp).
	Duration *time.Duration
	// Console receives the window blocks; nil prints none.
	Console io.Writer
	// Abort stops the run (the preflight failed); nil does nothing.
	Abort func(error)
	// RelayLogs are the relay's log files (--relay-log), their position
	// taken when the module is made, what they gained scanned at the end;
	// RelayLogRules say which lines count (logscan). The embedded relay's
	// own log is scanned by the same rules whenever it ran.
	RelayLogs     []string
	RelayLogRules logscan.Rules
	// Kubectl is the kubectl a kubectl:NAMESPACE/SELECTOR log source runs
	// ("" = kubectl on PATH; tests give a stand-in).
	Kubectl string
	// RelayMetrics are the relay's Prometheus endpoints (--relay-metrics:
	// URLs or kubectl:NAMESPACE/SELECTOR:PORT), read from the module's
	// start to the end of the run (relaymetricsrun.go); the embedded
	// relay's own is always read. RelayMetricsInterval: between readings
	// (0: relaymetrics.DefaultInterval).
	RelayMetrics         []string
	RelayMetricsInterval time.Duration
	// Version is buzzload's, written in every report (compare refuses
	// arms of different versions).
	Version string
	// LiveRelayMetrics pushes the relay's readings as the buzz_relay_*
	// metrics (relaymetricsrun.go); off, they are in the report only.
	LiveRelayMetrics bool
}

// Module is `k6/x/buzz` for one run: the root every VU's instance shares.
// It holds the loaded scenarios, the embedded relay (started lazily, once)
// and the shared HTTP pool. Build one per run with New; Close ends it.
type Module struct {
	opts Options

	// logFiles are --relay-log's files; ownLog scans the embedded relay's
	// log lines as they come; relayLogs are the scans' results, once made.
	logFiles  []*logscan.File
	kubeLogs  []*logscan.Kubectl
	ownLogMu  sync.Mutex
	ownLog    *logscan.Scanner
	logsOnce  sync.Once
	relayLogs []*logscan.Result

	// relayMetrics reads the relay's series; relayMetricsRep is what it
	// read, once the run ended (relaymetricsrun.go).
	relayMetrics    *relaymetrics.Watcher
	relayMetricsRep *report.RelayMetricsReport

	mu        sync.Mutex
	scenarios map[string]*loaded // by absolute path and shard
	relay     *relay.Relay
	relayErr  error
	stopRelay context.CancelFunc
	transport http.RoundTripper // the shared pool, within the body budget
	closed    bool

	segOnce sync.Once // the execution segment, read once from test.options
	tuple   *segment.Tuple
	segErr  error

	metricsOnce sync.Once
	met         *metricSet
	metErr      error

	failMu       sync.Mutex
	preflightErr error          // the first failed preflight
	reports      []string       // report files written
	reportErrs   []error        // report files that could not be written
	lastReport   *report.Report // the last report sc.report built (LastReport)
	// runEnd is why the run ended before its plan or failed ("": it has
	// not ended, or ended ok), from the engine (NoteRunEnd).
	runEnd string
	// outputs are the metric outputs' delivery counts (NoteOutputs).
	outputs []report.OutputDelivery
}

// NoteOutputs learns what the metric outputs delivered, for the report's
// outputs checks.
func (m *Module) NoteOutputs(ds []report.OutputDelivery) {
	m.failMu.Lock()
	m.outputs = ds
	m.failMu.Unlock()
}

// NoteRunEnd learns how the run ended, before handleSummary: a run cut
// short or failed (a signal, test.abort(), the REST API's stop, test.fail(),
// a script error) makes every report built after it a failure with that
// reason, whatever the script drove (reliability.md F5: custom scripts on
// sc.connect/sc.http were reported ok when interrupted).
func (m *Module) NoteRunEnd(code int, err error) {
	why := runEndReason(code, err)
	m.failMu.Lock()
	m.runEnd = why
	m.failMu.Unlock()
}

// runEndReason says why a run ended with code ("" for a pass, and for
// thresholds, which the report names itself).
func runEndReason(code int, err error) string {
	var why string
	switch code {
	case 0, 99:
		return ""
	case 103:
		why = "the run was stopped through the REST API"
	case 105:
		why = "the run was interrupted before its end (a signal)"
	case 108:
		why = "the run was aborted by test.abort()"
	case 110:
		why = "the run was marked as failed (test.fail())"
	case 104:
		why = "invalid configuration"
	default:
		why = "the run failed"
	}
	if err != nil {
		// A configuration problem thrown from the script: its own line,
		// not the JS stack around it (issue 47 item 3).
		var ce *configerr.Error
		if errors.As(err, &ce) {
			err = ce
		}
		why += ": " + err.Error()
	}
	return fmt.Sprintf("%s (exit %d)", why, code)
}

func (m *Module) runEndReason() string {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	return m.runEnd
}

func (m *Module) outputDeliveries() []report.OutputDelivery {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	return m.outputs
}

// PreflightError is the preflight failure that stopped the run, if any.
func (m *Module) PreflightError() error {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	return m.preflightErr
}

// failPreflight records a preflight failure and stops the run.
func (m *Module) failPreflight(err error) {
	m.failMu.Lock()
	first := m.preflightErr == nil
	if first {
		m.preflightErr = err
	}
	m.failMu.Unlock()
	if first && m.opts.Abort != nil {
		m.opts.Abort(err)
	}
}

// New returns the module of one run.
func New(opts Options) *Module {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	m := &Module{opts: opts, scenarios: map[string]*loaded{}}
	if m.opts.RelayLogRules.RunScope && m.opts.RelayLogRules.Scope == nil {
		m.opts.RelayLogRules.Scope = &logscan.Scope{} // the run's hosts and channels, added as scenarios load
	}
	for _, p := range opts.RelayLogs {
		if strings.HasPrefix(p, logscan.KubectlPrefix) {
			if k, err := logscan.ParseKubectl(p); err == nil {
				k.Since, k.Command = time.Now(), opts.Kubectl
				m.kubeLogs = append(m.kubeLogs, k)
			}
			continue
		}
		m.logFiles = append(m.logFiles, logscan.Open(p))
	}
	m.watchRelayMetrics()
	return m
}

// Close stops the embedded relay and releases the HTTP pool. The scripts'
// teardown and report helpers call it too; it is idempotent.
func (m *Module) Close() error {
	m.endOfRun()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, l := range m.scenarios {
		l.stopWindows()
	}
	var err error
	if m.relay != nil {
		err = m.relay.Close()
		m.stopRelay()
		m.relay = nil
		m.relayErr = errors.New("the embedded relay was stopped at the end of the run")
	}
	if c, ok := m.transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	return err
}

// EmbeddedRelay returns the embedded relay if it was started (tests).
func (m *Module) EmbeddedRelay() *relay.Relay {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.relay
}

// metricSet is the module's metrics (docs/architecture.md).
type metricSet struct {
	duration, failed, throttled, pending, clients, exits     *metrics.Metric
	expected                                                 *metrics.Metric // buzz_op_expected: errors an [[expect]] rule matched
	generator                                                *metrics.Metric // buzz_generator_saturated{step}: saturated steps
	generatorCPU                                             *metrics.Metric // buzz_generator_cpu: the process's share of its cores, live
	generatorLag                                             *metrics.Metric // buzz_generator_lag: due → started of each scheduled op
	setupDuration, setupFailed                               *metrics.Metric // buzz_setup_*: the seed's operations
	ledgerExpected, ledgerReceived, ledgerMissed, ledgerLost *metrics.Metric // buzz_ledger_*: the delivery ledger's counts
	relayStored, relayRejected, relayConns                   *metrics.Metric // buzz_relay_*: the relay's own series (relaymetricsrun.go)
	// dataSent and dataReceived are the host's built-in data_sent and
	// data_received (nil when the host has none).
	dataSent, dataReceived *metrics.Metric
}

func (m *Module) metrics(reg *metrics.Registry) (*metricSet, error) {
	m.metricsOnce.Do(func() {
		ms := &metricSet{}
		if err := reg.Bind([]metrics.Binding{
			{Dst: &ms.duration, Name: report.MetricOpDuration, Type: metrics.Trend, Contains: metrics.Time},
			{Dst: &ms.failed, Name: report.MetricOpFailed, Type: metrics.Rate, Contains: metrics.Default},
			{Dst: &ms.throttled, Name: report.MetricOpThrottled, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.expected, Name: report.MetricOpExpected, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.pending, Name: report.MetricOpPending, Type: metrics.Gauge, Contains: metrics.Default},
			{Dst: &ms.clients, Name: report.MetricClients, Type: metrics.Gauge, Contains: metrics.Default},
			{Dst: &ms.exits, Name: report.MetricClientExits, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.generator, Name: report.MetricGeneratorSaturated, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.generatorCPU, Name: report.MetricGeneratorCPU, Type: metrics.Gauge, Contains: metrics.Default},
			{Dst: &ms.generatorLag, Name: report.MetricGeneratorLag, Type: metrics.Trend, Contains: metrics.Time},
			{Dst: &ms.setupDuration, Name: report.MetricSetupDuration, Type: metrics.Trend, Contains: metrics.Time},
			{Dst: &ms.setupFailed, Name: report.MetricSetupFailed, Type: metrics.Rate, Contains: metrics.Default},
			{Dst: &ms.ledgerExpected, Name: report.MetricLedgerExpected, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.ledgerReceived, Name: report.MetricLedgerReceived, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.ledgerMissed, Name: report.MetricLedgerMissed, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.ledgerLost, Name: report.MetricLedgerLost, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.relayStored, Name: report.MetricRelayStored, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.relayRejected, Name: report.MetricRelayRejected, Type: metrics.Counter, Contains: metrics.Default},
			{Dst: &ms.relayConns, Name: report.MetricRelayConns, Type: metrics.Gauge, Contains: metrics.Default},
		}); err != nil {
			m.metErr = fmt.Errorf("k6/x/buzz: %w", err)
			return
		}
		ms.dataSent, ms.dataReceived = reg.Get(metrics.DataSentName), reg.Get(metrics.DataReceivedName)
		if ms.dataSent == nil || ms.dataReceived == nil || ms.dataSent.Type != metrics.Counter || ms.dataReceived.Type != metrics.Counter {
			ms.dataSent, ms.dataReceived = nil, nil
		}
		m.met = ms
	})
	return m.met, m.metErr
}

// httpPool is the run's shared HTTP connection pool.
func (m *Module) httpPool() (http.RoundTripper, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.transport == nil {
		t, err := relayclient.NewTransport(relayclient.TransportOptions{})
		if err != nil {
			return nil, err
		}
		m.transport = relayclient.WithBodyBudget(t, relayclient.DefaultBodyBudget)
	}
	return m.transport, nil
}

// embedded starts the embedded relay on first use and returns it.
func (m *Module) embedded() (*relay.Relay, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.relay != nil || m.relayErr != nil {
		return m.relay, m.relayErr
	}
	if m.closed {
		return nil, errors.New("k6/x/buzz: the run has ended")
	}
	cfg := relay.DefaultConfig()
	if err := envconfig.Process("", &cfg, m.opts.LookupEnv); err != nil {
		m.relayErr = fmt.Errorf("embedded relay: environment: %w", err)
		return nil, m.relayErr
	}
	cfg.Listen = "127.0.0.1:0" // loopback only, a free port
	m.ownLog = logscan.NewScanner("embedded relay", m.opts.RelayLogRules)
	cfg.Logf = func(format string, a ...any) {
		line := time.Now().UTC().Format(time.RFC3339Nano) + " " + fmt.Sprintf(format, a...)
		m.ownLogMu.Lock()
		m.ownLog.Line([]byte(line))
		m.ownLogMu.Unlock()
	}
	cfg.DrainOnClose = 500 * time.Millisecond
	if m.opts.Relay != nil {
		m.opts.Relay(&cfg)
	}
	r, err := relay.New(cfg)
	if err != nil {
		m.relayErr = fmt.Errorf("embedded relay: %w", err)
		return nil, m.relayErr
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.Start(ctx); err != nil {
		cancel()
		m.relayErr = fmt.Errorf("embedded relay: %w", err)
		return nil, m.relayErr
	}
	m.relay, m.stopRelay = r, cancel
	m.relayMetrics.Add(relaymetrics.Source{Spec: "embedded relay", URL: "http://" + r.Addr() + "/metrics"}, "")
	if m.opts.OnRelay != nil {
		m.opts.OnRelay(r)
	}
	return r, nil
}

// loadOptions are buzz.load's options.
type loadOptions struct {
	shard scenario.Shard
	// desktopMode, when set, replaces the file's [desktop].mode.
	desktopMode string
	// expect are the script's expected errors, added to the file's.
	expect []expect.Rule
	// drills are the script's drills, added to the file's (issue 42).
	drills []scenario.Drill
}

// load parses a scenario file once per run (and options) and shares it. The
// file is known by its path as written and its content.
func (m *Module) load(path string, data []byte, lo loadOptions) (*loaded, error) {
	sum := sha256.Sum256(data)
	exp, _ := json.Marshal(lo.expect)
	drills, _ := json.Marshal(lo.drills)
	key := fmt.Sprintf("%s#%x#%d/%d#%s#%s#%s", path, sum[:8], lo.shard.Index, lo.shard.Count, lo.desktopMode, exp, drills)
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.scenarios[key]; l != nil {
		return l, nil
	}
	sc, err := scenario.Parse(path, data)
	if err != nil {
		return nil, err
	}
	if m.opts.MemoryAvailable != nil {
		if err := sc.CheckMemory(m.opts.MemoryAvailable()); err != nil {
			return nil, err
		}
	}
	if lo.desktopMode != "" {
		sc.Desktop.Mode = lo.desktopMode // after parsing: the file's other keys still validate
	}
	if d := m.opts.Duration; d != nil {
		sc.SetDuration(*d)
	}
	if len(lo.drills) > 0 {
		if err := sc.AddDrills(lo.drills); err != nil {
			return nil, err
		}
	}
	set, err := expectRules(sc, lo.expect)
	if err != nil {
		return nil, err
	}
	// Before any key is derived: the identities mix in the run's secret.
	if _, err := sc.SetIdentitySecret(m.opts.LookupEnv); err != nil {
		return nil, fmt.Errorf("%s: identity secret: %w", path, err)
	}
	if err := sc.SetFederatedIdentity(m.opts.LookupEnv); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l := newLoaded(m, sc, lo.shard)
	if set != nil {
		l.expected = report.NewExpectedTally(set)
	}
	if !sc.IdentitiesSecret() && sc.SharedTarget() {
		l.identityWarning = scenario.NoSecretWarning
		if m.opts.Console != nil {
			fmt.Fprintf(m.opts.Console, "  ! %s\n", scenario.NoSecretWarning)
		}
	}
	if sc := m.opts.RelayLogRules.Scope; sc != nil {
		sc.Add(l.base.CommunityHosts()...)
		for _, ch := range l.base.Channels() {
			sc.Add(l.base.ChannelID(ch))
		}
	}
	m.scenarios[key] = l
	return l, nil
}
