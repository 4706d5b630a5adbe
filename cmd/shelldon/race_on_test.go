//go:build race

package main

// raceDetector says whether these tests run under the race detector, in
// which core and the broker (this test binary) run several times slower:
// tests that live many turns live fewer.
const raceDetector = true
