// Package tailbuf keeps the end of a stream whose length has no bound:
// the last bytes written and how many came before them. The end of a
// failing program's output is where its error is, so that is what a
// bounded record of it keeps.
package tailbuf
