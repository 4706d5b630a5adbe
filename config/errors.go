package config

import (
	"errors"
	"strings"
)

// ErrInvalid is wrapped by every error that reports a bad configuration: a
// missing or undecodable file, an unknown or mistyped key, a bad environment
// variable, a value that fails validation, a missing, unreadable or empty
// credential file, or a Telegram bot without allowed users. Test for it with
// errors.Is; the message says what to change.
var ErrInvalid = errors.New("invalid configuration")

// configError is one problem with one key, worded as
// "config <source>: <key>: <problem>; <fix>" ("config: <key>: ..." without
// a source).
type configError struct {
	// source is the file (with ":line" when known), "environment", ...; empty
	// where it cannot be known, as in Telegram.Check.
	source  string
	key     string // a key path or an environment variable; may be empty
	problem string
	fix     string // may be empty when problem already says how to fix it
	cause   error  // the underlying error, if any
}

func (e *configError) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.source != "" {
		b.WriteString(" ")
		b.WriteString(e.source)
	}
	b.WriteString(": ")
	if e.key != "" {
		b.WriteString(e.key)
		b.WriteString(": ")
	}
	b.WriteString(e.problem)
	if e.fix != "" {
		b.WriteString("; ")
		b.WriteString(e.fix)
	}
	return b.String()
}

func (e *configError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.cause}
}

// Sources name where a value came from in error messages.
const (
	sourceEnvironment = "environment"
	sourceDefaults    = "defaults"
	sourceInMemory    = "in memory" // Validate called on a Config that Load did not build
)

// origins remembers which keys the file and the environment set, so that a
// validation error names the source of the values it is about.
type origins struct {
	file     string
	fromFile map[string]bool
	fromEnv  map[string]bool
	fallback string // the source of values neither the file nor the environment set
}

func newOrigins(file string) origins {
	return origins{file: file, fromFile: map[string]bool{}, fromEnv: map[string]bool{}, fallback: sourceDefaults}
}

// source names where the values of keys came from: the file, the
// environment or both, or the fallback when neither set any of them.
// "provider[2].model" counts as "provider".
func (o origins) source(keys ...string) string {
	var fromFile, fromEnv bool
	for _, key := range keys {
		if i := strings.IndexByte(key, '['); i >= 0 {
			key = key[:i]
		}
		fromFile = fromFile || o.fromFile[key]
		fromEnv = fromEnv || o.fromEnv[key]
	}
	switch {
	case fromFile && fromEnv:
		return o.file + " and " + sourceEnvironment
	case fromFile:
		return o.file
	case fromEnv:
		return sourceEnvironment
	}
	return o.fallback
}
