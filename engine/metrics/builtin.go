package metrics

import "fmt"

// Names of k6's built-in metrics (spec §5).
const (
	VUsName               = "vus"
	VUsMaxName            = "vus_max"
	IterationsName        = "iterations"
	IterationDurationName = "iteration_duration"
	DroppedIterationsName = "dropped_iterations"
	DataSentName          = "data_sent"
	DataReceivedName      = "data_received"
	ChecksName            = "checks"
	GroupDurationName     = "group_duration"

	HTTPReqsName              = "http_reqs"
	HTTPReqFailedName         = "http_req_failed"
	HTTPReqDurationName       = "http_req_duration"
	HTTPReqBlockedName        = "http_req_blocked"
	HTTPReqConnectingName     = "http_req_connecting"
	HTTPReqTLSHandshakingName = "http_req_tls_handshaking"
	HTTPReqSendingName        = "http_req_sending"
	HTTPReqWaitingName        = "http_req_waiting"
	HTTPReqReceivingName      = "http_req_receiving"
)

// ExpectedResponseSubmetric is the sub-metric k6 creates by itself when the
// expected_response system tag is on (the default): Track it at start-up.
const ExpectedResponseSubmetric = "http_req_duration{expected_response:true}"

// BuiltinDef declares one built-in metric.
type BuiltinDef struct {
	Name     string
	Type     Type
	Contains ValueType
}

// BuiltinDefs lists k6's built-in metrics (spec §5), runner and HTTP ones.
func BuiltinDefs() []BuiltinDef {
	return []BuiltinDef{
		{VUsName, Gauge, Default},
		{VUsMaxName, Gauge, Default},
		{IterationsName, Counter, Default},
		{IterationDurationName, Trend, Time},
		{DroppedIterationsName, Counter, Default},
		{DataSentName, Counter, Data},
		{DataReceivedName, Counter, Data},
		{ChecksName, Rate, Default},
		{GroupDurationName, Trend, Time},
		{HTTPReqsName, Counter, Default},
		{HTTPReqFailedName, Rate, Default},
		{HTTPReqDurationName, Trend, Time},
		{HTTPReqBlockedName, Trend, Time},
		{HTTPReqConnectingName, Trend, Time},
		{HTTPReqTLSHandshakingName, Trend, Time},
		{HTTPReqSendingName, Trend, Time},
		{HTTPReqWaitingName, Trend, Time},
		{HTTPReqReceivingName, Trend, Time},
	}
}

// Builtins holds the runner's own built-in metrics.
type Builtins struct {
	VUs, VUsMax                   *Metric
	Iterations, IterationDuration *Metric
	DroppedIterations             *Metric
	DataSent, DataReceived        *Metric
	Checks, GroupDuration         *Metric
}

// RegisterBuiltins registers every metric of BuiltinDefs (so thresholds on
// them are valid even before a sample) and returns the runner's own ones.
func (r *Registry) RegisterBuiltins() (*Builtins, error) {
	for _, d := range BuiltinDefs() {
		if _, err := r.New(d.Name, d.Type, d.Contains); err != nil {
			return nil, fmt.Errorf("built-in metrics: %w", err)
		}
	}
	return &Builtins{
		VUs: r.Get(VUsName), VUsMax: r.Get(VUsMaxName),
		Iterations: r.Get(IterationsName), IterationDuration: r.Get(IterationDurationName),
		DroppedIterations: r.Get(DroppedIterationsName),
		DataSent:          r.Get(DataSentName), DataReceived: r.Get(DataReceivedName),
		Checks: r.Get(ChecksName), GroupDuration: r.Get(GroupDurationName),
	}, nil
}
