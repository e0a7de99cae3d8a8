package models

import "time"

// ConnectPacer spaces connection attempts at population.connect_rate_per_sec:
// each attempt gets the next free slot, one interval after the previous
// one, or now when the pacer has fallen idle. It decides when and does not
// sleep; the caller waits (extension/exec.go). Not safe for concurrent use.
type ConnectPacer struct {
	interval time.Duration
	next     time.Time
}

// NewConnectPacer paces perSec attempts a second; perSec <= 0 never waits.
func NewConnectPacer(perSec float64) ConnectPacer {
	if perSec <= 0 {
		return ConnectPacer{}
	}
	return ConnectPacer{interval: time.Duration(float64(time.Second) / perSec)}
}

// Reserve books the next attempt asked for at now and returns when it may
// start (now or later). An idle pacer does not bank slots: attempts after
// a quiet spell are spaced from now, not sent in a burst.
func (p *ConnectPacer) Reserve(now time.Time) time.Time {
	if p.interval <= 0 {
		return now
	}
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.interval)
	return at
}
