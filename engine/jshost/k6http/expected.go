package k6http

import (
	"errors"

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
func (c *client) expectedStatuses(call sobek.FunctionCall) sobek.Value {
	e := &expectedStatuses{}
	for i, a := range call.Arguments {
		if o, ok := a.(*sobek.Object); ok && o.ClassName() == "Object" {
			lo, hi := o.Get("min"), o.Get("max")
			if lo == nil || hi == nil || sobek.IsUndefined(lo) || sobek.IsUndefined(hi) {
				c.throw(errors.New("expectedStatuses: a range needs min and max"))
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
				c.throw(errors.New("expectedStatuses: a status must be an integer"))
			}
			e.single = append(e.single, int(f))
		default:
			_ = i
			c.throw(errors.New("expectedStatuses: arguments must be integers or {min, max} objects"))
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
		c.throw(errors.New("setResponseCallback takes the result of http.expectedStatuses or null"))
	}
	c.callback = e
	return sobek.Undefined()
}
