package jshost

// LogWarn logs a warning from a module (k6/http's "Request Failed" and
// redirect-limit warnings) with key/value fields.
func (v *VU) LogWarn(msg string, fields ...string) {
	v.b.cfg.Logger.Log(LevelWarn, msg, fields...)
}

// StopIfDone interrupts the running call at once when its context has
// ended. A blocking call (sleep, an HTTP request) that returned because the
// context ended calls it, so no script code runs after it: once gracefulStop
// runs out, k6 runs nothing more of the interrupted iteration. Without it
// the asynchronous interrupt raced the next statements (which then still
// recorded samples).
func (v *VU) StopIfDone() {
	if v.ctx == nil || v.ctx.Err() == nil {
		return
	}
	v.intMu.Lock()
	if v.running {
		v.rt.Interrupt(errInterrupted)
	}
	v.intMu.Unlock()
}
