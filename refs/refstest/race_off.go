//go:build !race

package refstest

const raceEnabled = false
