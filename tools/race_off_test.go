//go:build !race

package tools

const raceDetector = false
