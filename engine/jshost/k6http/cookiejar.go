package k6http

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/grafana/sobek"
)

// cookieJar is http.CookieJar: the VU's jar (http.cookieJar()) or one made
// with new http.CookieJar().
type cookieJar struct {
	c   *client
	jar http.CookieJar
}

func (j *cookieJar) parse(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		j.c.throw(errors.New("cookie jar: invalid URL " + raw))
	}
	return u
}

// CookiesForURL returns {name: [values]}.
func (j *cookieJar) CookiesForURL(raw string) map[string][]string {
	out := map[string][]string{}
	for _, ck := range j.jar.Cookies(j.parse(raw)) {
		out[ck.Name] = append(out[ck.Name], ck.Value)
	}
	return out
}

// Set stores a cookie for the URL; opts may hold domain, path, expires
// (a date string), max_age, secure, http_only.
func (j *cookieJar) Set(raw, name, value string, opts sobek.Value) {
	u := j.parse(raw)
	ck := &http.Cookie{Name: name, Value: value}
	if o, ok := opts.(*sobek.Object); ok {
		if v := o.Get("domain"); v != nil && !sobek.IsUndefined(v) {
			ck.Domain = v.String()
		}
		if v := o.Get("path"); v != nil && !sobek.IsUndefined(v) {
			ck.Path = v.String()
		}
		if v := o.Get("expires"); v != nil && !sobek.IsUndefined(v) {
			t, err := http.ParseTime(v.String())
			if err != nil {
				t, err = time.Parse(time.RFC3339, v.String())
			}
			if err != nil {
				j.c.throw(errors.New("cookie jar: unparsable expires " + v.String()))
			}
			ck.Expires = t
		}
		if v := o.Get("max_age"); v != nil && !sobek.IsUndefined(v) {
			ck.MaxAge = int(v.ToInteger())
		}
		if v := o.Get("secure"); v != nil {
			ck.Secure = v.ToBoolean()
		}
		if v := o.Get("http_only"); v != nil {
			ck.HttpOnly = v.ToBoolean()
		}
	}
	j.jar.SetCookies(u, []*http.Cookie{ck})
}

// Clear removes every cookie the jar sends to the URL.
func (j *cookieJar) Clear(raw string) {
	u := j.parse(raw)
	for _, ck := range j.jar.Cookies(u) {
		j.jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: "", MaxAge: -1, Path: "/"}})
		j.jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: "", MaxAge: -1}})
	}
}

// Delete removes one cookie for the URL.
func (j *cookieJar) Delete(raw, name string) {
	u := j.parse(raw)
	j.jar.SetCookies(u, []*http.Cookie{{Name: name, Value: "", MaxAge: -1, Path: "/"}})
	j.jar.SetCookies(u, []*http.Cookie{{Name: name, Value: "", MaxAge: -1}})
}
