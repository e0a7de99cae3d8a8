package jshost

// LogWarn logs a warning from a module (k6/http's "Request Failed" and
// redirect-limit warnings) with key/value fields.
func (v *VU) LogWarn(msg string, fields ...string) {
	v.b.cfg.Logger.Log(LevelWarn, msg, fields...)
}
