//go:build !race

package relayclient

// raceEnabled: built with -race.
const raceEnabled = false
