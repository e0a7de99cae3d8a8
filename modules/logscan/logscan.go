// Package logscan reads the relay's own log for the run's verdict (issue
// 26, the soak tool's ERROR-log scan with a hard default of 0,
// ../shared/seeds/soak-tool-load_test.zh.md §4): the position of a log
// file is taken when the run starts, and what was appended by its end is
// scanned for error lines. A rotated file (another inode at the path) is
// read to its end through the descriptor opened at the start, then the new
// file from its beginning; a truncated one from its beginning; both are
// said in the result's notes.
package logscan

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultPattern matches Buzz's ERROR-level lines in both of tracing's
// formats: text ("2026-12-04T01:02:03Z ERROR buzz::…: …") and JSON
// ({"level":"ERROR",…}).
const DefaultPattern = `(^|[\s"])ERROR([\s"]|$)`

// Rules say which lines count.
type Rules struct {
	Pattern *regexp.Regexp   // an error line; nil: DefaultPattern
	Allow   []*regexp.Regexp // error lines that match one of these do not count
	Max     int              // more counted lines than this fail the check (default 0)
	// RunScope counts only error lines that name one of Scope's terms
	// (--relay-log-scope run: the run's community hosts and channels), so
	// another tenant's errors on a shared relay do not fail the run.
	RunScope bool
	Scope    *Scope
}

// Scope is the terms a run-scoped line must name; filled while the run's
// scenarios load, read when lines are counted. Safe for concurrent use.
type Scope struct {
	mu    sync.RWMutex
	terms map[string]bool
}

// Add adds terms ("" is ignored).
func (s *Scope) Add(terms ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terms == nil {
		s.terms = map[string]bool{}
	}
	for _, t := range terms {
		if t != "" {
			s.terms[t] = true
		}
	}
}

// names reports whether line names one of the terms.
func (s *Scope) names(line []byte) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for t := range s.terms {
		if bytes.Contains(line, []byte(t)) {
			return true
		}
	}
	return false
}

// Group is the counted lines of one normalised message.
type Group struct {
	Message string   `json:"message"`
	Count   int      `json:"count"`
	Samples []string `json:"samples"`
}

// Result is what one scan found.
type Result struct {
	Source  string `json:"source"`
	Lines   int    `json:"lines"`   // lines scanned
	Counted int    `json:"counted"` // error lines not allowed
	// LongLines are lines longer than 64 KiB: scanned whole in parts, their
	// first 64 KiB kept as a sample.
	LongLines int `json:"long_lines,omitempty"`
	Allowed   int `json:"allowed,omitempty"`
	// Scope is which lines counted: "all", or "run" (only lines naming
	// the run's hosts or channels); OutOfScope the error lines another
	// tenant's (naming none of them), not counted.
	Scope      string   `json:"scope"`
	OutOfScope int      `json:"out_of_scope,omitempty"`
	Max        int      `json:"max"`
	Groups     []Group  `json:"groups,omitempty"`
	Notes      []string `json:"notes,omitempty"` // rotation, truncation, a best-effort source
	Error      string   `json:"error,omitempty"` // the log could not be read
}

// Failed reports whether the counted lines exceed the maximum.
func (r *Result) Failed() bool { return r.Counted > r.Max }

const (
	maxGroups  = 50
	maxSamples = 3
	maxLine    = 64 << 10
	// overlap is what a long line's next read is matched with of the one
	// before: longer than any marker a pattern looks for.
	overlap = 1 << 10
)

// Scanner counts error lines as they are fed.
type Scanner struct {
	rules  Rules
	res    Result
	groups map[string]*Group
}

// NewScanner starts a scan of source with rules.
func NewScanner(source string, rules Rules) *Scanner {
	if rules.Pattern == nil {
		rules.Pattern = regexp.MustCompile(DefaultPattern)
	}
	scope := "all"
	if rules.RunScope {
		scope = "run"
	}
	return &Scanner{rules: rules, res: Result{Source: source, Max: rules.Max, Scope: scope}, groups: map[string]*Group{}}
}

// Line scans one line.
func (s *Scanner) Line(line []byte) {
	s.count(line, s.rules.Pattern.Match(line), matchAny(s.rules.Allow, line))
}

func matchAny(res []*regexp.Regexp, b []byte) bool {
	for _, a := range res {
		if a.Match(b) {
			return true
		}
	}
	return false
}

// count takes one line, matched by the error pattern or not and by an
// allow rule or not; line is its text (a long line's head).
func (s *Scanner) count(line []byte, matched, allowed bool) {
	s.res.Lines++
	if !matched {
		return
	}
	if allowed {
		s.res.Allowed++
		return
	}
	if s.rules.RunScope && !s.rules.Scope.names(line) {
		s.res.OutOfScope++
		return
	}
	s.res.Counted++
	key := normalise(line)
	g := s.groups[key]
	if g == nil {
		if len(s.groups) >= maxGroups {
			key = "(other messages)"
			if g = s.groups[key]; g == nil {
				g = &Group{Message: key}
				s.groups[key] = g
			}
		} else {
			g = &Group{Message: key}
			s.groups[key] = g
		}
	}
	g.Count++
	if len(g.Samples) < maxSamples {
		g.Samples = append(g.Samples, string(bytes.TrimSpace(line)))
	}
}

// Feed scans every line of r.
func (s *Scanner) Feed(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer is scanned whole, a buffer at a
			// time with an overlap (a marker split between two reads still
			// matches), in bounded memory; its head is the sample (issue 43
			// L3: an ERROR past the first 64 KiB was missed).
			head := append([]byte(nil), line[:min(len(line), maxLine)]...)
			matched, allowed := s.rules.Pattern.Match(line), matchAny(s.rules.Allow, line)
			tail := append([]byte(nil), line[len(line)-min(len(line), overlap):]...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				win := append(tail, line...)
				matched = matched || s.rules.Pattern.Match(win)
				allowed = allowed || matchAny(s.rules.Allow, win)
				tail = append(tail[:0], win[len(win)-min(len(win), overlap):]...)
			}
			s.res.LongLines++
			s.count(bytes.TrimRight(head, "\r\n"), matched, allowed)
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			continue
		}
		if len(line) > 0 {
			s.Line(bytes.TrimRight(line, "\r\n"))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Note adds a note to the result.
func (s *Scanner) Note(format string, args ...any) {
	s.res.Notes = append(s.res.Notes, fmt.Sprintf(format, args...))
}

// Result is the scan so far, groups by count.
func (s *Scanner) Result() *Result {
	r := s.res
	r.Groups = nil
	for _, g := range s.groups {
		r.Groups = append(r.Groups, *g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		if r.Groups[i].Count != r.Groups[j].Count {
			return r.Groups[i].Count > r.Groups[j].Count
		}
		return r.Groups[i].Message < r.Groups[j].Message
	})
	return &r
}

var (
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?`)
	hexRE  = regexp.MustCompile(`\b[0-9a-fA-F]{16,}\b`)
	numRE  = regexp.MustCompile(`\d+(\.\d+)*`)
)

// normalise strips what differs between two lines of one failure:
// timestamps, ids, numbers.
func normalise(line []byte) string {
	s := string(bytes.TrimSpace(line))
	if len(s) > 300 {
		s = s[:300]
	}
	s = timeRE.ReplaceAllString(s, "<time>")
	s = hexRE.ReplaceAllString(s, "<id>")
	return numRE.ReplaceAllString(s, "<n>")
}

// File is a log file whose position was taken at the start of the run.
type File struct {
	path string
	f    *os.File
	off  int64
	ino  uint64
	err  error
}

// Open takes path's position now. A file that does not exist yet is read
// from its beginning at the end.
func Open(path string) *File {
	lf := &File{path: path}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return lf
	}
	if err != nil {
		lf.err = err
		return lf
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		lf.err = err
		return lf
	}
	lf.f, lf.off, lf.ino = f, st.Size(), inode(st)
	return lf
}

// Readable reports a log that cannot be read (checked before a run
// starts); one that does not exist yet is fine: the relay may create it.
func Readable(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return err
}

// Scan scans what was appended since Open, following a rotation or a
// truncation, and closes the file.
func (lf *File) Scan(rules Rules) *Result {
	s := NewScanner(lf.path, rules)
	if lf.err != nil {
		r := s.Result()
		r.Error = lf.err.Error()
		return r
	}
	defer func() {
		if lf.f != nil {
			lf.f.Close()
		}
	}()
	cur, err := os.Stat(lf.path)
	switch {
	case err != nil && lf.f == nil:
		r := s.Result()
		r.Error = err.Error()
		return r
	case lf.f == nil:
		// Created during the run: all of it is the run's.
		return lf.scanPath(s, 0)
	case err != nil || inode(cur) != lf.ino:
		// Rotated (or removed): the rest of the old file, then the new one.
		s.Note("%s was rotated during the run: scanned the rest of the old file, then the new one", lf.path)
		if _, err := lf.f.Seek(lf.off, io.SeekStart); err == nil {
			_ = s.Feed(lf.f)
		}
		if err == nil {
			return lf.scanPath(s, 0)
		}
		return s.Result()
	case cur.Size() < lf.off:
		s.Note("%s was truncated during the run (%d bytes at the start, %d now): scanned from its beginning", lf.path, lf.off, cur.Size())
		return lf.scanFile(s, 0)
	}
	return lf.scanFile(s, lf.off)
}

func (lf *File) scanFile(s *Scanner, off int64) *Result {
	if _, err := lf.f.Seek(off, io.SeekStart); err != nil {
		r := s.Result()
		r.Error = err.Error()
		return r
	}
	if err := s.Feed(lf.f); err != nil {
		r := s.Result()
		r.Error = err.Error()
		return r
	}
	return s.Result()
}

func (lf *File) scanPath(s *Scanner, off int64) *Result {
	f, err := os.Open(lf.path)
	if err != nil {
		r := s.Result()
		r.Error = err.Error()
		return r
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err == nil {
		if err := s.Feed(f); err != nil {
			r := s.Result()
			r.Error = err.Error()
			return r
		}
	}
	return s.Result()
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// KubectlPrefix marks a --relay-log source read with kubectl:
// "kubectl:NAMESPACE/SELECTOR" (a label selector, e.g. app=buzz).
const KubectlPrefix = "kubectl:"

// Kubectl is a relay log read through `kubectl logs` (read-only): the pods
// matching a label selector in a namespace, every container, from the time
// the run started. Best effort: a pod restarted or rescheduled during the
// run may have lost lines, which the result's notes say.
type Kubectl struct {
	Namespace, Selector string
	Since               time.Time
	// Command is the kubectl to run ("kubectl" on PATH when empty).
	Command string
}

// ParseKubectl reads "kubectl:NAMESPACE/SELECTOR".
func ParseKubectl(src string) (*Kubectl, error) {
	rest, ok := strings.CutPrefix(src, KubectlPrefix)
	if !ok {
		return nil, fmt.Errorf("%q is not %sNAMESPACE/SELECTOR", src, KubectlPrefix)
	}
	ns, sel, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || sel == "" {
		return nil, fmt.Errorf("%q: want %sNAMESPACE/SELECTOR, e.g. kubectl:buzz/app=buzz-relay", src, KubectlPrefix)
	}
	return &Kubectl{Namespace: ns, Selector: sel}, nil
}

// Args are kubectl's arguments: every matching pod's containers, with the
// pod name on each line, since the run's start.
func (k *Kubectl) Args() []string {
	return []string{"logs", "--namespace", k.Namespace, "--selector", k.Selector, "--all-containers", "--prefix",
		"--since-time=" + k.Since.UTC().Format(time.RFC3339), "--tail=-1", "--max-log-requests=20"}
}

// Scan runs kubectl logs and scans what it prints.
func (k *Kubectl) Scan(ctx context.Context, rules Rules) *Result {
	src := KubectlPrefix + k.Namespace + "/" + k.Selector
	s := NewScanner(src, rules)
	s.Note("read with kubectl logs --since-time (best effort: a pod restarted during the run may have lost lines)")
	bin := k.Command
	if bin == "" {
		bin = "kubectl"
	}
	cmd := exec.CommandContext(ctx, bin, k.Args()...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		r := s.Result()
		r.Error = err.Error()
		return r
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		r := s.Result()
		r.Error = err.Error()
		return r
	}
	ferr := s.Feed(out)
	werr := cmd.Wait()
	r := s.Result()
	switch {
	case werr != nil:
		r.Error = fmt.Sprintf("kubectl logs: %v: %s", werr, strings.TrimSpace(stderr.String()))
	case ferr != nil:
		r.Error = ferr.Error()
	}
	return r
}
