// Package units holds shelldon's systemd unit files, slices and the
// sysusers and tmpfiles snippets that `make install` puts in place. They
// are embedded so that a test can install them into a real systemd and
// check that it accepts them.
package units

import "embed"

// Files are the unit files and snippets, by their names in this folder.
//
//go:embed *.service *.slice *.sysusers *.tmpfiles
var Files embed.FS
