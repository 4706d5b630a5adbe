// Package images carries the recipes that build the root file systems
// shelldon runs commands in, so the binary can build them without the
// source tree. The builder that reads them is shelldon/sandbox/image.
package images
