//go:build race

package main

// raceEnabled is true when the tests run with -race: the binary under test is then built
// with -race too, which reuses the packages the test build compiled.
const raceEnabled = true
