package relayclient

import (
	"testing"
	"time"
)

type fakeLedger struct{ Ledger }

type ledgerSink struct {
	NopSink
	l Ledger
}

func (s ledgerSink) Ledger() Ledger { return s.l }

type wrapSink struct {
	NopSink
	inner Sink
}

func (s wrapSink) Unwrap() Sink { return s.inner }

type watcherSink struct{ NopSink }

func (watcherSink) Watcher() Watcher { return nopWatcher{} }

type nopWatcher struct{}

func (nopWatcher) ConnUp(string, string, time.Time)        {}
func (nopWatcher) SubsLive(string, string, int, time.Time) {}
func (nopWatcher) ConnEnded(ConnEnd)                       {}

// The ledger and the watcher a sink carries are found through the sinks
// that wrap it (the models' stop and grace sinks), and not past one that
// carries none.
func TestSourcesAreFoundThroughWrappers(t *testing.T) {
	l := fakeLedger{}
	inner := ledgerSink{l: l}
	if got := LedgerOf(wrapSink{inner: wrapSink{inner: inner}}); got != l {
		t.Fatalf("through two wrappers: %v", got)
	}
	if LedgerOf(wrapSink{inner: NopSink{}}) != nil || LedgerOf(wrapSink{}) != nil || LedgerOf(NopSink{}) != nil {
		t.Fatal("a ledger where none is carried")
	}
	if WatcherOf(wrapSink{inner: watcherSink{}}) == nil || WatcherOf(wrapSink{inner: inner}) != nil {
		t.Fatal("the watcher is not found through a wrapper, or found where none is")
	}
}
