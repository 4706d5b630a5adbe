// Package hubtest runs a real hub on a real socket for other packages'
// tests (the bus client's, the terminal chat's), where the test itself
// plays core.
package hubtest
