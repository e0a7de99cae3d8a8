// Package js holds the JavaScript helpers embedded in the buzzload binary.
// Scripts import them as "buzzload/<file>", e.g.
//
//	import { rampStages } from "buzzload/ramps.js";
//
// The prefix reads like a relative path on purpose: copy this directory next
// to a script as ./buzzload/ and the same import works under real k6.
package js

import "embed"

// FS is the embedded helpers, served by engine/jshost under "buzzload/".
//
//go:embed *.js
var FS embed.FS
