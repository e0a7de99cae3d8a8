// Package downsample keeps a growing list of time windows bounded: past
// its cap the older half is merged pairwise, so a long run keeps full
// resolution for its recent part and memory stays flat (the Buzz report's
// windows, the web dashboard's periods).
package downsample

// OlderHalf merges the older half of ws pairwise with merge (an odd window
// at the boundary is kept as it is) and keeps the newer half.
func OlderHalf[T any](ws []T, merge func(a, b T) T) []T {
	half := len(ws) / 2
	out := make([]T, 0, len(ws)-half/2)
	for i := 0; i+1 < half; i += 2 {
		out = append(out, merge(ws[i], ws[i+1]))
	}
	if half%2 == 1 {
		out = append(out, ws[half-1])
	}
	return append(out, ws[half:]...)
}
