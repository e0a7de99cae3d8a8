package jshost

import (
	"net/url"
	"testing"
)

// FuzzCompile: any source either compiles (as an ES module or as CommonJS)
// or gives an error; it never panics.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"export default function () {}",
		"import x from './y.js'; export { x };",
		"await 1; export const a = 1;",
		"module.exports = { default: () => 1 };",
		"let = = 1;",
		"export default function () {",
		"export { a as b, a as b };",
		"import { a } from 'k6'; export * from 'k6/metrics';",
		"with (x) {}",
		"`${",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		l := newLoader(NewRegistry(), nil, nil)
		rec, err := l.compile(&url.URL{Scheme: "file", Path: "/fuzz/main.js"}, src)
		if err == nil && rec == nil {
			t.Fatal("no record and no error")
		}
	})
}
