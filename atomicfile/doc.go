// Package atomicfile replaces a file's content so that a reader, or a crash,
// sees either the old content or the new one, never a mix or a truncated file.
package atomicfile
