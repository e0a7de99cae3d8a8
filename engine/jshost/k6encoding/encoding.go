// Package k6encoding is `k6/encoding` (k6 docs, javascript-api/k6-encoding):
// b64encode and b64decode with the std, rawstd, url and rawurl alphabets.
package k6encoding

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/grafana/sobek"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
)

// Module is k6/encoding.
var Module = jsmodule.ModuleFunc(newInstance)

func newInstance(vu jsmodule.VU) (jsmodule.Instance, error) {
	rt := vu.Runtime()
	e := &enc{rt: rt}
	return jsmodule.StaticExports{Named: map[string]any{
		"b64encode": e.encode,
		"b64decode": e.decode,
	}}, nil
}

type enc struct{ rt *sobek.Runtime }

func encodingFor(v sobek.Value) (*base64.Encoding, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return base64.StdEncoding, nil
	}
	switch s := v.String(); s {
	case "", "std":
		return base64.StdEncoding, nil
	case "rawstd":
		return base64.RawStdEncoding, nil
	case "url":
		return base64.URLEncoding, nil
	case "rawurl":
		return base64.RawURLEncoding, nil
	default:
		return nil, fmt.Errorf("unknown base64 encoding %q (want std, rawstd, url or rawurl)", s)
	}
}

// Bytes reads a string (as UTF-8), an ArrayBuffer or a typed array.
func Bytes(v sobek.Value) ([]byte, error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil, errors.New("no data given")
	}
	switch x := v.Export().(type) {
	case string:
		return []byte(x), nil
	case sobek.ArrayBuffer:
		return x.Bytes(), nil
	case []byte:
		return x, nil
	}
	if o, ok := v.(*sobek.Object); ok {
		if ab, ok := o.Get("buffer").Export().(sobek.ArrayBuffer); ok {
			off, n := o.Get("byteOffset").ToInteger(), o.Get("byteLength").ToInteger()
			return ab.Bytes()[off : off+n], nil
		}
	}
	return []byte(v.String()), nil
}

func (e *enc) throw(err error) {
	panic(e.rt.NewTypeError(err.Error()))
}

// encode is b64encode(input, [encoding]).
func (e *enc) encode(call sobek.FunctionCall) sobek.Value {
	b, err := Bytes(call.Argument(0))
	if err != nil {
		e.throw(err)
	}
	en, err := encodingFor(call.Argument(1))
	if err != nil {
		e.throw(err)
	}
	return e.rt.ToValue(en.EncodeToString(b))
}

// decode is b64decode(input, [encoding], [format]): a string when format is
// "s", an ArrayBuffer otherwise (k6 v0.31+).
func (e *enc) decode(call sobek.FunctionCall) sobek.Value {
	en, err := encodingFor(call.Argument(1))
	if err != nil {
		e.throw(err)
	}
	b, err := en.DecodeString(call.Argument(0).String())
	if err != nil {
		e.throw(fmt.Errorf("b64decode: %w", err))
	}
	if f := call.Argument(2); !sobek.IsUndefined(f) && f.String() == "s" {
		return e.rt.ToValue(string(b))
	}
	return e.rt.ToValue(e.rt.NewArrayBuffer(b))
}
