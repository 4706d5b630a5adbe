//go:build race

package main

// raceDetector says whether these tests run under the race detector, in
// which every worker (this test binary) starts and runs several times
// slower: tests that live many turns live fewer.
const raceDetector = true
