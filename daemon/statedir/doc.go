// Package statedir knows where everything lives in shelldon's state
// directory and reads the parts a turn needs: the directive, the owner
// profile and the face registry.
//
// It only reads. The worker imports it, and the worker must never write
// state; the writer is package state, which takes its paths from here.
package statedir
