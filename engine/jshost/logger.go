package jshost

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Level is a log level.
type Level uint8

// Log levels, lowest first.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

// ParseLevel reads a level's name ("debug", "info", "warn" or "warning",
// "error"), as the runner's parts that log through callbacks name them;
// another name is def.
func ParseLevel(name string, def Level) Level {
	switch name {
	case "debug":
		return LevelDebug
	case "info":
		return LevelInfo
	case "warn", "warning":
		return LevelWarn
	case "error":
		return LevelError
	}
	return def
}

func (l Level) String() string {
	return [...]string{"debug", "info", "warning", "error"}[l]
}

// Logger writes k6-style text log lines (`time=... level=... msg=...
// key=value`) to one writer. It is safe for concurrent use.
type Logger struct {
	mu  sync.Mutex
	w   io.Writer
	min Level
	now func() time.Time
	tee func(t time.Time, level, msg string, fields []string)
}

// SetTee gives every line written also to f (a cloud run's log stream).
// Set it before the logger is used.
func (l *Logger) SetTee(f func(t time.Time, level, msg string, fields []string)) { l.tee = f }

// NewLogger returns a logger writing lines at or above min to w.
func NewLogger(w io.Writer, min Level) *Logger {
	if w == nil {
		w = io.Discard
	}
	return &Logger{w: w, min: min, now: time.Now}
}

// Log writes one line. fields are key, value pairs.
func (l *Logger) Log(level Level, msg string, fields ...string) {
	if l == nil || level < l.min {
		return
	}
	now := l.now()
	if l.tee != nil {
		l.tee(now, level.String(), msg, fields)
	}
	var b strings.Builder
	b.WriteString("time=")
	b.WriteString(strconv.Quote(now.Format(time.RFC3339)))
	b.WriteString(" level=")
	b.WriteString(level.String())
	if msg != "" {
		// logrus's text formatter leaves an empty message out, as k6's
		// console.log("") shows (`level=info source=console`).
		b.WriteString(" msg=")
		b.WriteString(quoteIfNeeded(msg))
	}
	type kv struct{ k, v string }
	var kvs []kv
	for i := 0; i+1 < len(fields); i += 2 {
		kvs = append(kvs, kv{fields[i], fields[i+1]})
	}
	sort.SliceStable(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
	for _, f := range kvs {
		b.WriteByte(' ')
		b.WriteString(f.k)
		b.WriteByte('=')
		b.WriteString(quoteIfNeeded(f.v))
	}
	b.WriteByte('\n')
	l.mu.Lock()
	_, _ = io.WriteString(l.w, b.String())
	l.mu.Unlock()
}

// Errorf, Warnf, Infof and Debugf log formatted messages.
func (l *Logger) Errorf(format string, a ...any) { l.Log(LevelError, fmt.Sprintf(format, a...)) }

// Warnf logs at warning level.
func (l *Logger) Warnf(format string, a ...any) { l.Log(LevelWarn, fmt.Sprintf(format, a...)) }

// Infof logs at info level.
func (l *Logger) Infof(format string, a ...any) { l.Log(LevelInfo, fmt.Sprintf(format, a...)) }

// Debugf logs at debug level.
func (l *Logger) Debugf(format string, a ...any) { l.Log(LevelDebug, fmt.Sprintf(format, a...)) }

func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r > '~' {
			return strconv.Quote(s)
		}
	}
	return s
}
