package jshost

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/grafana/sobek"
	"github.com/grafana/sobek/ast"
	"github.com/grafana/sobek/parser"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// HelperPrefix is the import prefix of the JS helpers embedded in the binary
// (the js/ directory): `import { ramp } from "buzzload/ramps.js"`. Because it
// reads like a relative path, a script stays runnable by real k6 when a copy
// of js/ sits next to it as ./buzzload/.
const HelperPrefix = "buzzload/"

// loader resolves and compiles modules. One loader is shared by every VU of a
// run: module records are compiled once and instantiated per runtime. After
// the first init (VU 0) it is locked: nothing new may be read from disk, so
// every VU sees exactly the files the first init saw.
type loader struct {
	registry *jsmodule.Registry
	helpers  fs.FS
	readFile func(string) ([]byte, error)
	host     *Bundle

	mu      sync.Mutex
	locked  bool
	records map[string]sobek.ModuleRecord // by URL string (or k6 path)
	urls    map[sobek.ModuleRecord]*url.URL
	files   map[string][]byte // open() cache, by absolute path
}

func newLoader(reg *jsmodule.Registry, helpers fs.FS, readFile func(string) ([]byte, error)) *loader {
	if readFile == nil {
		readFile = os.ReadFile
	}
	return &loader{
		registry: reg, helpers: helpers, readFile: readFile,
		records: map[string]sobek.ModuleRecord{},
		urls:    map[sobek.ModuleRecord]*url.URL{},
		files:   map[string][]byte{},
	}
}

func (l *loader) lock() {
	l.mu.Lock()
	l.locked = true
	l.mu.Unlock()
}

// fileURL turns a path into a file:// URL.
func fileURL(p string) *url.URL {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = p
	}
	return &url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
}

// urlOf returns the URL a record was loaded from.
func (l *loader) urlOf(rec any) *url.URL {
	r, ok := rec.(sobek.ModuleRecord)
	if !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.urls[r]
}

// resolve is the sobek HostResolveImportedModuleFunc.
func (l *loader) resolve(referrer any, specifier string) (sobek.ModuleRecord, error) {
	if specifier == "k6" || strings.HasPrefix(specifier, "k6/") {
		return l.goModule(specifier)
	}
	var base *url.URL
	if referrer != nil {
		base = l.urlOf(referrer)
	}
	u, err := l.resolveURL(base, specifier)
	if err != nil {
		return nil, err
	}
	return l.load(u)
}

func (l *loader) resolveURL(base *url.URL, specifier string) (*url.URL, error) {
	if strings.HasPrefix(specifier, HelperPrefix) {
		name := strings.TrimPrefix(specifier, HelperPrefix)
		if path.Ext(name) == "" {
			name += ".js" // "buzzload/summary" is summary.js, as jslib imports read
		}
		return &url.URL{Scheme: "buzzload", Path: "/" + name}, nil
	}
	if base == nil {
		return fileURL(specifier), nil
	}
	if filepath.IsAbs(specifier) && !strings.Contains(specifier, "://") {
		return fileURL(specifier), nil
	}
	ref, err := url.Parse(specifier)
	if err != nil {
		return nil, fmt.Errorf("import %q: %w", specifier, err)
	}
	u := base.ResolveReference(ref)
	switch u.Scheme {
	case "file", "buzzload":
		return u, nil
	default:
		return nil, fmt.Errorf("import %q: only local files and %s helpers can be imported (scheme %q)", specifier, HelperPrefix, u.Scheme)
	}
}

func (l *loader) goModule(p string) (sobek.ModuleRecord, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.records[p]; ok {
		return r, nil
	}
	m, ok := l.registry.Get(p)
	if !ok {
		return nil, fmt.Errorf("unknown module %q (registered: %s)", p, strings.Join(l.registry.Paths(), ", "))
	}
	r := &goModuleRecord{path: p, mod: m, host: l.host}
	l.records[p] = r
	return r, nil
}

// read returns the bytes behind a URL, honouring the lock.
func (l *loader) read(u *url.URL) ([]byte, error) {
	switch u.Scheme {
	case "buzzload":
		if l.helpers == nil {
			return nil, fmt.Errorf("%s%s: no embedded helpers", HelperPrefix, strings.TrimPrefix(u.Path, "/"))
		}
		b, err := fs.ReadFile(l.helpers, strings.TrimPrefix(u.Path, "/"))
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", HelperPrefix, strings.TrimPrefix(u.Path, "/"), err)
		}
		return b, nil
	case "file":
		return l.readPath(filepath.FromSlash(u.Path))
	}
	return nil, fmt.Errorf("%s: unsupported scheme", u)
}

// readPath reads a local file once; later reads come from the cache, and once
// locked only cached files can be read.
func (l *loader) readPath(p string) ([]byte, error) {
	l.mu.Lock()
	if b, ok := l.files[p]; ok {
		l.mu.Unlock()
		return b, nil
	}
	locked := l.locked
	l.mu.Unlock()
	if locked {
		return nil, fmt.Errorf("open %s: only files opened during the first initialization (__VU==0) can be read", p)
	}
	st, err := os.Stat(p)
	if err == nil && st.IsDir() {
		return nil, fmt.Errorf("open %s: is a directory", p)
	}
	b, err := l.readFile(p)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.files[p] = b
	l.mu.Unlock()
	return b, nil
}

func (l *loader) load(u *url.URL) (sobek.ModuleRecord, error) {
	key := u.String()
	l.mu.Lock()
	if r, ok := l.records[key]; ok {
		l.mu.Unlock()
		return r, nil
	}
	locked := l.locked
	l.mu.Unlock()
	if locked {
		return nil, fmt.Errorf("module %s was not imported during the first initialization (__VU==0)", displayURL(u))
	}
	src, err := l.read(u)
	if err != nil {
		return nil, err
	}
	rec, err := l.compile(u, string(src))
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.records[key]; ok { // another VU won the race
		return r, nil
	}
	l.records[key] = rec
	l.urls[rec] = u
	return rec, nil
}

// displayURL is how a module is named in error messages and stack traces.
func displayURL(u *url.URL) string {
	if u.Scheme == "buzzload" {
		return HelperPrefix + strings.TrimPrefix(u.Path, "/")
	}
	return u.String()
}

// compile parses src as an ES module; a file with no import, export or
// top-level await is wrapped as CommonJS instead (as k6 does).
func (l *loader) compile(u *url.URL, src string) (sobek.ModuleRecord, error) {
	name := displayURL(u)
	prg, err := parser.ParseFile(nil, name, src, 0, parser.IsModule, parser.WithDisableSourceMaps)
	err = syntaxError(err)
	if err == nil && isESM(prg) {
		rec, err := sobek.ModuleFromAST(prg, l.resolve)
		if err != nil {
			return nil, err
		}
		return rec, nil
	}
	cjs, cerr := compileCJS(name, src)
	if cerr != nil {
		if err != nil {
			return nil, err
		}
		return nil, cerr
	}
	cjs.loader = l
	return cjs, nil
}

// syntaxError rewrites parser errors as "SyntaxError: file:line:col: msg".
func syntaxError(err error) error {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		more := ""
		if len(list) > 1 {
			more = fmt.Sprintf(" (and %d more errors)", len(list)-1)
		}
		return &SyntaxError{Msg: fmt.Sprintf("SyntaxError: %s:%d:%d: %s%s", e.Position.Filename, e.Position.Line, e.Position.Column, e.Message, more)}
	}
	return err
}

// SyntaxError is a script that does not parse.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return e.Msg }

func isESM(prg *ast.Program) bool {
	return len(prg.ImportEntries) > 0 || len(prg.ExportEntries) > 0 || prg.HasTLA
}

// errNotFunction is returned when the CommonJS wrapper did not produce a
// function, which only a broken wrapper can cause.
var errNotFunction = errors.New("commonjs wrapper is not a function")

// cleanPath makes an open() path absolute against dir.
func cleanPath(dir, p string) string {
	p = strings.TrimPrefix(p, "file://")
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return path.Clean(filepath.ToSlash(p))
}
