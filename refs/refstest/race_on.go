//go:build race

package refstest

// raceEnabled is set when the tests are built with -race: the programs
// they build (Build) are built with it too, so that a data race in the
// git-lease binary fails the test that ran it.
const raceEnabled = true
