package k6http

import (
	"bytes"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/sobek"
)

// URLTemplate is what the http.url tagged template returns: the URL and the
// template text with `${}` in place of each value, used as the name tag.
type URLTemplate struct {
	URL  string `js:"url"`
	Name string `js:"name"`
}

// String lets a URLTemplate stand for its URL.
func (u *URLTemplate) String() string { return u.URL }

// FileData is what http.file returns: a file for a multipart body.
type FileData struct {
	Data        []byte `js:"data"`
	Filename    string `js:"filename"`
	ContentType string `js:"content_type"`
}

// reqCookie is a request-scoped cookie (params.cookies).
type reqCookie struct {
	Name, Value string
	Replace     bool
}

// spec is one request, read from the script on the VU goroutine; executing
// it touches no JS.
type spec struct {
	method    string
	url       *url.URL
	name      string // name tag from http.url or params.tags.name
	nameSet   bool
	body      []byte
	hasBody   bool
	headers   http.Header
	host      string
	tags      map[string]string
	timeout   time.Duration
	redirects int
	respType  string // text, binary, none
	cookies   []reqCookie
	auth      string
	compress  []string
	jar       http.CookieJar
	expected  *expectedStatuses // nil: no http_req_failed, no expected_response
	throw     bool              // a failed request throws (params.throw, else options.throw)
}

const defaultTimeout = 60 * time.Second

var errNoURL = errors.New("no URL given")

// parseURL reads the url argument: a string or an http.url template.
func parseURL(v sobek.Value) (raw, name string, fromTemplate bool, err error) {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return "", "", false, errNoURL
	}
	if t, ok := v.Export().(*URLTemplate); ok {
		return t.URL, t.Name, true, nil
	}
	return v.String(), "", false, nil
}

// buildSpec reads method, url, body and params.
func (c *client) buildSpec(method string, urlV, bodyV, paramsV sobek.Value) (*spec, error) {
	raw, tmplName, fromTmpl, err := parseURL(urlV)
	if err != nil {
		return nil, err
	}
	// A URL that parses without a scheme or host is sent as it is: the
	// transport refuses it (`unsupported protocol scheme ""`, 1000), as k6
	// v2.2.0 does (observed), a counted, failed request.
	u, err := url.Parse(raw)
	if err != nil {
		return nil, invalidURL(err)
	}
	s := &spec{
		// The method is sent as written, as k6 does (http.request("patch", …) sends "patch").
		method: method, url: u, headers: http.Header{}, tags: map[string]string{},
		timeout: defaultTimeout, redirects: c.set.maxRedirects, jar: c.jar, expected: c.callback, throw: c.set.throw,
	}
	if fromTmpl {
		s.name, s.nameSet = tmplName, true
	}
	if c.set.discard {
		s.respType = "none"
	} else {
		s.respType = "text"
	}
	if err := c.readParams(s, paramsV); err != nil {
		return nil, err
	}
	if err := c.readBody(s, bodyV); err != nil {
		return nil, err
	}
	if len(s.compress) > 0 && s.hasBody {
		b, err := compressBody(s.body, s.compress)
		if err != nil {
			return nil, err
		}
		s.body = b
		s.headers.Set("Content-Encoding", strings.Join(s.compress, ", "))
	}
	return s, nil
}

func (c *client) readParams(s *spec, v sobek.Value) error {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil
	}
	o, ok := v.(*sobek.Object)
	if !ok {
		return errors.New("params must be an object")
	}
	rt := c.rt
	for _, k := range o.Keys() {
		val := o.Get(k)
		if val == nil || sobek.IsUndefined(val) || sobek.IsNull(val) {
			if k == "responseCallback" {
				s.expected = nil
			}
			continue
		}
		switch k {
		case "headers":
			ho, ok := val.(*sobek.Object)
			if !ok {
				return errors.New("params.headers must be an object")
			}
			for _, hk := range ho.Keys() {
				hv := ho.Get(hk)
				if hv == nil || sobek.IsUndefined(hv) || sobek.IsNull(hv) {
					continue
				}
				if strings.EqualFold(hk, "host") {
					s.host = hv.String()
					continue
				}
				s.headers.Set(hk, hv.String())
			}
		case "tags":
			to, ok := val.(*sobek.Object)
			if !ok {
				return errors.New("params.tags must be an object")
			}
			for _, tk := range to.Keys() {
				tv := to.Get(tk)
				switch tv.Export().(type) {
				case string, int64, float64, bool:
				default:
					return fmt.Errorf("params.tags: tag %q must be a string, number or boolean", tk)
				}
				if tk == "name" {
					s.name, s.nameSet = tv.String(), true
					continue
				}
				s.tags[tk] = tv.String()
			}
		case "timeout":
			d, err := durationValue(val)
			if err != nil {
				return fmt.Errorf("params.timeout: %w", err)
			}
			s.timeout = d
		case "redirects":
			n := val.ToInteger()
			if n < 0 {
				return errors.New("params.redirects must not be negative")
			}
			s.redirects = int(n)
		case "responseType":
			switch rtp := val.String(); rtp {
			case "text", "binary", "none":
				s.respType = rtp
			default:
				return fmt.Errorf("params.responseType %q: want text, binary or none", rtp)
			}
		case "cookies":
			co, ok := val.(*sobek.Object)
			if !ok {
				return errors.New("params.cookies must be an object")
			}
			for _, ck := range co.Keys() {
				cv := co.Get(ck)
				rc := reqCookie{Name: ck}
				if cvo, isObj := cv.(*sobek.Object); isObj {
					rc.Value = cvo.Get("value").String()
					if r := cvo.Get("replace"); r != nil {
						rc.Replace = r.ToBoolean()
					}
				} else {
					rc.Value = cv.String()
				}
				s.cookies = append(s.cookies, rc)
			}
		case "auth":
			switch a := val.String(); a {
			case "basic", "digest":
				s.auth = a
			case "ntlm":
				return errors.New("params.auth: ntlm is not supported by buzzload")
			default:
				return fmt.Errorf("params.auth %q: want basic, digest or ntlm", a)
			}
		case "compression":
			for _, alg := range strings.Split(val.String(), ",") {
				alg = strings.TrimSpace(alg)
				switch alg {
				case "gzip", "deflate", "br", "zstd":
					s.compress = append(s.compress, alg)
				case "":
				default:
					return fmt.Errorf("params.compression: unknown algorithm %q (want gzip, deflate, br or zstd)", alg)
				}
			}
		case "jar":
			j, ok := val.Export().(*cookieJar)
			if !ok {
				return errors.New("params.jar must be an http.CookieJar")
			}
			s.jar = j.jar
		case "responseCallback":
			cb, ok := val.Export().(*expectedStatuses)
			if !ok {
				return errors.New("params.responseCallback must come from http.expectedStatuses")
			}
			s.expected = cb
		case "throw":
			// per request, over the throw option (k6 v1.8.1 honours it)
			s.throw = val.ToBoolean()
		}
	}
	_ = rt
	return nil
}

// durationValue reads a k6 duration: a number of milliseconds or a string.
func durationValue(v sobek.Value) (time.Duration, error) {
	switch x := v.Export().(type) {
	case int64:
		return time.Duration(x) * time.Millisecond, nil
	case float64:
		return time.Duration(x * float64(time.Millisecond)), nil
	}
	str := v.String()
	if f, err := strconv.ParseFloat(str, 64); err == nil {
		return time.Duration(f * float64(time.Millisecond)), nil
	}
	d, err := time.ParseDuration(str)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", str)
	}
	return d, nil
}

// readBody reads the body argument: string, ArrayBuffer or typed array, a
// FileData, or an object (form fields, multipart when one holds a file).
func (c *client) readBody(s *spec, v sobek.Value) error {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil
	}
	s.hasBody = true
	switch x := v.Export().(type) {
	case string:
		s.body = []byte(x)
		return nil
	case sobek.ArrayBuffer:
		s.body = append([]byte(nil), x.Bytes()...)
		return nil
	case []byte:
		s.body = append([]byte(nil), x...)
		return nil
	case *FileData:
		s.body = append([]byte(nil), x.Data...)
		return nil
	}
	o, ok := v.(*sobek.Object)
	if !ok {
		s.body = []byte(v.String())
		return nil
	}
	if o.ClassName() == "Uint8Array" || o.ClassName() == "Int8Array" {
		if ab, ok := o.Get("buffer").Export().(sobek.ArrayBuffer); ok {
			off, n := o.Get("byteOffset").ToInteger(), o.Get("byteLength").ToInteger()
			s.body = append([]byte(nil), ab.Bytes()[off:off+n]...)
			return nil
		}
	}
	keys := o.Keys()
	multi := false
	for _, k := range keys {
		if _, isFile := o.Get(k).Export().(*FileData); isFile {
			multi = true
			break
		}
	}
	if !multi {
		form := url.Values{}
		for _, k := range keys {
			fv := o.Get(k)
			if arr, isArr := fv.(*sobek.Object); isArr && arr.ClassName() == "Array" {
				for _, ik := range arr.Keys() {
					form.Add(k, arr.Get(ik).String())
				}
				continue
			}
			form.Add(k, fv.String())
		}
		s.body = []byte(form.Encode())
		if s.headers.Get("Content-Type") == "" {
			s.headers.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return nil
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	sort.Strings(keys)
	for _, k := range keys {
		fv := o.Get(k)
		if f, isFile := fv.Export().(*FileData); isFile {
			h := textproto.MIMEHeader{}
			fname := f.Filename
			if fname == "" {
				fname = k
			}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, k, fname))
			ct := f.ContentType
			if ct == "" {
				ct = "application/octet-stream"
			}
			h.Set("Content-Type", ct)
			pw, err := w.CreatePart(h)
			if err != nil {
				return err
			}
			if _, err := pw.Write(f.Data); err != nil {
				return err
			}
			continue
		}
		if err := w.WriteField(k, fv.String()); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	s.body = buf.Bytes()
	if s.headers.Get("Content-Type") == "" {
		s.headers.Set("Content-Type", w.FormDataContentType())
	}
	return nil
}

// cleanURL is the URL as tags and logs show it: without a password.
func cleanURL(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	if _, has := u.User.Password(); has {
		c.User = url.UserPassword(u.User.Username(), "****")
	}
	return c.String()
}
