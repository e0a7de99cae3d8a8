//go:build !unix

package relay

// oNoFollow: no such flag here; O_CREATE|O_EXCL alone refuses an existing
// path, links included.
const oNoFollow = 0
