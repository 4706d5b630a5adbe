// Package image builds and finds the sandbox image: the minimal Debian
// root file system that systemd-nspawn runs each sandboxed command in.
//
// A recipe (images/sandbox.recipe) names the suite, the packages and the
// commands that prove a built root works. Build runs mmdebstrap into a
// temporary directory of the image cache, runs every verification command
// inside it with systemd-nspawn, and only then renames it into place as
// sandbox-<hash>, where the hash covers the recipe, the builder's format
// and the Debian architecture, but not the mirror. A cached image whose
// hash matches is used as it is, so building is cheap to call again.
//
// An image may be built for another architecture than this machine's
// (BuildOptions.Arch: the board's arm64 on an amd64 host, for the test VM
// of the board's architecture); its programs then run under
// qemu-user-static through binfmt_misc ([CheckEmulation]). A build
// replaces only the images of its own architecture.
package image
