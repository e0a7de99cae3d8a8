// Package textsummary is the Go side of `buzzload/summary`'s textSummary:
// k6's compact end-of-test text rendered from handleSummary's data, with the
// k6-summary jslib's options (indent, enableColors).
package textsummary

import (
	"encoding/json"
	"errors"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/summary"
)

// ImportPath is where js/summary.js imports the renderer from.
const ImportPath = "k6/x/buzzload/summary"

// Module is the renderer module.
var Module = jsmodule.ModuleFunc(func(vu jsmodule.VU) (jsmodule.Instance, error) {
	rt := vu.Runtime()
	return jsmodule.StaticExports{Named: map[string]any{
		"textSummary": func(data, opts sobek.Value) string {
			s, err := Render(rt, data, opts)
			if err != nil {
				panic(rt.NewTypeError(err.Error()))
			}
			return s
		},
	}}, nil
})

// Render is textSummary(data, {indent, enableColors}).
func Render(rt *sobek.Runtime, data, opts sobek.Value) (string, error) {
	if data == nil || sobek.IsUndefined(data) || sobek.IsNull(data) {
		return "", errors.New("textSummary(data, options): data is handleSummary's argument")
	}
	stringify, _ := sobek.AssertFunction(rt.Get("JSON").ToObject(rt).Get("stringify"))
	raw, err := stringify(sobek.Undefined(), data)
	if err != nil {
		return "", err
	}
	var o summary.TextOptions
	if obj, ok := opts.(*sobek.Object); ok {
		if v := obj.Get("indent"); v != nil && !sobek.IsUndefined(v) {
			o.Indent = v.String()
		}
		if v := obj.Get("enableColors"); v != nil {
			o.Color = v.ToBoolean()
		}
	}
	return summary.TextFromData(json.RawMessage(raw.String()), o)
}
