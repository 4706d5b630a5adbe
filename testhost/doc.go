// Package testhost tells tests what this machine can do — run as root,
// find a tool — and skips a test that needs what is missing with a message
// that names it. Under SHELLDON_REQUIRE_ALL=1 (CI) such a skip is a
// failure instead, so a green CI run means every test level really ran.
package testhost
