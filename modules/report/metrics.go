package report

// The Buzz module's metrics (docs/architecture.md "Metrics"): the
// extension registers them, the report, the result files and the web
// dashboard's operation view read them by these names.
const (
	MetricOpDuration         = "buzz_op_duration"
	MetricOpFailed           = "buzz_op_failed"
	MetricOpThrottled        = "buzz_op_throttled"
	MetricOpExpected         = "buzz_op_expected"
	MetricOpPending          = "buzz_op_pending"
	MetricClients            = "buzz_clients"
	MetricClientExits        = "buzz_client_exits"
	MetricGeneratorSaturated = "buzz_generator_saturated"
	// The delivery ledger's running counts of (event, subscription) pairs
	// (issue 40): expected and received as events are judged, missed live
	// as they are declared, lost at the end.
	MetricLedgerExpected = "buzz_ledger_expected"
	MetricLedgerReceived = "buzz_ledger_received"
	MetricLedgerMissed   = "buzz_ledger_missed"
	MetricLedgerLost     = "buzz_ledger_lost"
	MetricGeneratorCPU   = "buzz_generator_cpu"
	MetricGeneratorLag   = "buzz_generator_lag"
	// The relay's own counts as its Prometheus series gave them (issue
	// 45), live: events stored and rejections (events and admission) per
	// reading, and connections open at each reading, tagged source.
	MetricRelayStored   = "buzz_relay_events_stored"
	MetricRelayRejected = "buzz_relay_rejections"
	MetricRelayConns    = "buzz_relay_connections"
	// The seed's operations (setup, not load): their own metrics, so the
	// load's latency and error rate, and an alert on them, never carry the
	// seed's (issue 47 items 1 and 6).
	MetricSetupDuration = "buzz_setup_duration"
	MetricSetupFailed   = "buzz_setup_failed"
)
