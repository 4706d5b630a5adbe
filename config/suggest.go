package config

import "strings"

// closestKey suggests the known key path a mistyped one most likely meant:
// the nearest by edit distance, ignoring case, or else one with the same
// last part in another table ("turn.cpu_seconds" → "worker.cpu_seconds").
func closestKey(key string, known []string) (string, bool) {
	if guess, ok := closest(key, known, 2); ok {
		return guess, true
	}
	leaf := strings.ToLower(leafKey(key))
	for _, k := range known {
		if leafKey(k) == leaf {
			return k, true
		}
	}
	return "", false
}

// closest returns the candidate nearest to target, ignoring case, if it is
// within maxDistance edits.
func closest(target string, candidates []string, maxDistance int) (string, bool) {
	best, bestDistance := "", maxDistance+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(target), strings.ToLower(c)); d < bestDistance {
			best, bestDistance = c, d
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	previous := make([]int, len(b)+1)
	current := make([]int, len(b)+1)
	for j := range previous {
		previous[j] = j
	}
	for i := 1; i <= len(a); i++ {
		current[0] = i
		for j := 1; j <= len(b); j++ {
			substitution := previous[j-1]
			if a[i-1] != b[j-1] {
				substitution++
			}
			current[j] = min(substitution, previous[j]+1, current[j-1]+1)
		}
		previous, current = current, previous
	}
	return previous[len(b)]
}
