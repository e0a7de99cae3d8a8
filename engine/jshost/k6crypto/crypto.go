// Package k6crypto is `k6/crypto` (k6 docs, javascript-api/k6-crypto):
// md4, md5, sha1, sha256, sha384, sha512, sha512_224, sha512_256,
// ripemd160, hmac, createHash, createHMAC and randomBytes, with hex, base64
// and binary (ArrayBuffer) outputs.
package k6crypto

import (
	"crypto/hmac"
	"crypto/md5" //nolint:gosec // k6/crypto offers md5 for scripts that need it
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // as above
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"

	"github.com/grafana/sobek"
	//lint:ignore SA1019 k6/crypto offers md4: scripts written for k6 call it
	"golang.org/x/crypto/md4"
	//lint:ignore SA1019 k6/crypto offers ripemd160: scripts written for k6 call it
	"golang.org/x/crypto/ripemd160"

	"github.com/buzzload/buzzload/engine/jshost/jsmodule"
	"github.com/buzzload/buzzload/engine/jshost/k6encoding"
)

// Module is k6/crypto.
var Module = jsmodule.ModuleFunc(newInstance)

var algorithms = map[string]func() hash.Hash{
	"md4": md4.New, "md5": md5.New, "sha1": sha1.New, "sha256": sha256.New,
	"sha384": sha512.New384, "sha512": sha512.New, "sha512_224": sha512.New512_224,
	"sha512_256": sha512.New512_256, "ripemd160": ripemd160.New,
}

type mod struct{ rt *sobek.Runtime }

func newInstance(vu jsmodule.VU) (jsmodule.Instance, error) {
	m := &mod{rt: vu.Runtime()}
	named := map[string]any{
		"createHash":  m.createHash,
		"createHMAC":  m.createHMAC,
		"hmac":        m.hmac,
		"randomBytes": m.randomBytes,
	}
	for name := range algorithms {
		alg := name
		named[alg] = func(data sobek.Value, enc sobek.Value) sobek.Value {
			h := m.hasher(alg)
			m.write(h, data)
			return m.output(h.Sum(nil), enc)
		}
	}
	return jsmodule.StaticExports{Named: named}, nil
}

func (m *mod) throw(err error) { panic(m.rt.NewTypeError(err.Error())) }

func (m *mod) hasher(alg string) hash.Hash {
	f, ok := algorithms[alg]
	if !ok {
		m.throw(fmt.Errorf("invalid algorithm: %s", alg))
	}
	return f()
}

func (m *mod) write(h hash.Hash, data sobek.Value) {
	b, err := k6encoding.Bytes(data)
	if err != nil {
		m.throw(err)
	}
	h.Write(b)
}

// output encodes a digest: "hex", "base64", "base64url", "base64rawurl",
// "binary" (an ArrayBuffer); anything else is an error.
func (m *mod) output(sum []byte, enc sobek.Value) sobek.Value {
	e := "hex"
	if enc != nil && !sobek.IsUndefined(enc) && !sobek.IsNull(enc) {
		e = enc.String()
	}
	switch e {
	case "hex":
		return m.rt.ToValue(hex.EncodeToString(sum))
	case "base64":
		return m.rt.ToValue(base64.StdEncoding.EncodeToString(sum))
	case "base64url":
		return m.rt.ToValue(base64.URLEncoding.EncodeToString(sum))
	case "base64rawurl":
		return m.rt.ToValue(base64.RawURLEncoding.EncodeToString(sum))
	case "binary":
		return m.rt.ToValue(m.rt.NewArrayBuffer(sum))
	}
	m.throw(fmt.Errorf("invalid output encoding: %s", e))
	return nil
}

// hasherObject is what createHash and createHMAC return: update(data) and
// digest(encoding).
func (m *mod) hasherObject(h hash.Hash) *sobek.Object {
	o := m.rt.NewObject()
	_ = o.Set("update", func(data sobek.Value) sobek.Value { m.write(h, data); return o })
	_ = o.Set("digest", func(enc sobek.Value) sobek.Value { return m.output(h.Sum(nil), enc) })
	return o
}

func (m *mod) createHash(alg string) *sobek.Object { return m.hasherObject(m.hasher(alg)) }

func (m *mod) newHMAC(alg string, key sobek.Value) hash.Hash {
	f, ok := algorithms[alg]
	if !ok {
		m.throw(fmt.Errorf("invalid algorithm: %s", alg))
	}
	k, err := k6encoding.Bytes(key)
	if err != nil {
		m.throw(err)
	}
	return hmac.New(f, k)
}

func (m *mod) createHMAC(alg string, key sobek.Value) *sobek.Object {
	return m.hasherObject(m.newHMAC(alg, key))
}

// hmac is hmac(algorithm, secret, data, outputEncoding).
func (m *mod) hmac(alg string, key, data, enc sobek.Value) sobek.Value {
	h := m.newHMAC(alg, key)
	m.write(h, data)
	return m.output(h.Sum(nil), enc)
}

// randomBytes is randomBytes(n): an ArrayBuffer of n bytes from crypto/rand.
func (m *mod) randomBytes(n int64) sobek.Value {
	if n < 1 {
		m.throw(fmt.Errorf("invalid size: %d", n))
	}
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		m.throw(err)
	}
	return m.rt.ToValue(m.rt.NewArrayBuffer(b))
}
