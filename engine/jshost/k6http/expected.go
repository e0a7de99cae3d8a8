package k6http

import (
	"errors"
	"fmt"

	"github.com/grafana/sobek"
)

// expectedStatuses is what http.expectedStatuses returns: the statuses that
// count as expected for http_req_failed and the expected_response tag.
type expectedStatuses struct {
	single []int
	ranges [][2]int
}

// defaultExpected is k6's default callback: 200-399.
func defaultExpected() *expectedStatuses {
	return &expectedStatuses{ranges: [][2]int{{200, 399}}}
}

func (e *expectedStatuses) match(status int) bool {
	for _, s := range e.single {
		if s == status {
			return true
		}
	}
	for _, r := range e.ranges {
		if status >= r[0] && status <= r[1] {
			return true
		}
	}
	return false
}

// expectedStatuses is http.expectedStatuses(200, {min: 300, max: 399}, ...).
// Bad arguments throw k6 v1.8.1's errors, as GoErrors (observed).
func (c *client) expectedStatuses(call sobek.FunctionCall) sobek.Value {
	if len(call.Arguments) == 0 {
		panic(c.rt.NewGoError(errors.New("no arguments")))
	}
	e := &expectedStatuses{}
	bad := func(i int) {
		panic(c.rt.NewGoError(fmt.Errorf("argument number %d to expectedStatuses was neither an integer nor an object like {min:100, max:329}", i+1)))
	}
	for i, a := range call.Arguments {
		if o, ok := a.(*sobek.Object); ok && o.ClassName() == "Object" {
			lo, hi := o.Get("min"), o.Get("max")
			if lo == nil || hi == nil || sobek.IsUndefined(lo) || sobek.IsUndefined(hi) {
				bad(i)
			}
			e.ranges = append(e.ranges, [2]int{int(lo.ToInteger()), int(hi.ToInteger())})
			continue
		}
		switch a.Export().(type) {
		case int64:
			e.single = append(e.single, int(a.ToInteger()))
		case float64:
			f := a.ToFloat()
			if f != float64(int64(f)) {
				bad(i)
			}
			e.single = append(e.single, int(f))
		default:
			bad(i)
		}
	}
	return c.rt.ToValue(e)
}

// setResponseCallback sets the VU's callback; null switches http_req_failed
// and the expected_response tag off.
func (c *client) setResponseCallback(call sobek.FunctionCall) sobek.Value {
	a := call.Argument(0)
	if sobek.IsNull(a) || sobek.IsUndefined(a) {
		c.callback = nil
		return sobek.Undefined()
	}
	e, ok := a.Export().(*expectedStatuses)
	if !ok {
		panic(c.rt.NewGoError(errors.New("unsupported argument, expected http.expectedStatuses")))
	}
	c.callback = e
	return sobek.Undefined()
}
