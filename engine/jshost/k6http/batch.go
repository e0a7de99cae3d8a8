package k6http

import (
	"errors"
	"fmt"
	"sync"

	"github.com/grafana/sobek"
)

// batch is http.batch(requests): an array or an object of requests, each a
// URL string, an array [method, url, body, params] or an object {method,
// url, body, params}. They run in parallel, at most `batch` at once and
// `batchPerHost` per host, and the responses come back in the same shape.
func (c *client) batch(call sobek.FunctionCall) sobek.Value {
	c.prepare()
	in, ok := call.Argument(0).(*sobek.Object)
	if !ok {
		c.throw(errors.New("http.batch takes an array or an object of requests"))
	}
	isArr := in.ClassName() == "Array"
	keys := in.Keys()
	specs := make([]*spec, len(keys))
	early := make([]*result, len(keys))
	for i, k := range keys {
		s, err := c.batchItem(in.Get(k))
		if err != nil {
			var re *reqError
			if !errors.As(err, &re) || c.set.throw {
				c.throw(fmt.Errorf("batch request %s: %w", k, err))
			}
			early[i] = &result{err: re}
			specs[i] = &spec{respType: "text"}
			continue
		}
		specs[i] = s
	}
	c.ensureTransport()
	ctx, ec := c.vu.Context(), c.emitCtx()
	results := make([]*result, len(keys))
	var warnMu sync.Mutex
	var warns []string
	warn := func(m string) { warnMu.Lock(); warns = append(warns, m); warnMu.Unlock() }
	total := c.set.batch
	if total <= 0 {
		total = len(keys)
	}
	sem := make(chan struct{}, max(total, 1))
	var hostMu sync.Mutex
	perHost := map[string]chan struct{}{}
	hostSem := func(h string) chan struct{} {
		if c.set.batchPerHost <= 0 {
			return nil
		}
		hostMu.Lock()
		defer hostMu.Unlock()
		ch := perHost[h]
		if ch == nil {
			ch = make(chan struct{}, c.set.batchPerHost)
			perHost[h] = ch
		}
		return ch
	}
	var wg sync.WaitGroup
	for i, s := range specs {
		if early[i] != nil {
			results[i] = early[i]
			continue
		}
		wg.Add(1)
		go func(i int, s *spec) {
			defer wg.Done()
			hs := hostSem(s.url.Host)
			if hs != nil {
				hs <- struct{}{}
				defer func() { <-hs }()
			}
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = c.execute(ctx, s, ec, warn)
		}(i, s)
	}
	wg.Wait()
	for _, w := range warns {
		c.warn(w)
	}
	var out *sobek.Object
	if isArr {
		out = c.rt.NewArray()
	} else {
		out = c.rt.NewObject()
	}
	for i, k := range keys {
		_ = out.Set(k, c.finish(specs[i], results[i]))
	}
	return out
}

func (c *client) batchItem(v sobek.Value) (*spec, error) {
	o, isObj := v.(*sobek.Object)
	if !isObj {
		return c.buildSpec("GET", v, nil, nil)
	}
	if _, isTmpl := v.Export().(*URLTemplate); isTmpl {
		return c.buildSpec("GET", v, nil, nil)
	}
	if o.ClassName() == "Array" {
		get := func(i int) sobek.Value { return o.Get(fmt.Sprint(i)) }
		n := int(o.Get("length").ToInteger())
		if n < 2 {
			return nil, errors.New("an array request needs at least [method, url]")
		}
		return c.buildSpec(get(0).String(), get(1), get(2), get(3))
	}
	method := "GET"
	if m := o.Get("method"); m != nil && !sobek.IsUndefined(m) {
		method = m.String()
	}
	return c.buildSpec(method, o.Get("url"), o.Get("body"), o.Get("params"))
}
