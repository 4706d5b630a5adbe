// Package chattest drives a terminal program through a real
// pseudo-terminal, for the tests of the terminal chat (`shelldon chat`,
// `shelldon up --chat`): the program gets the terminal's slave side as
// its standard input and output, the test types on the master side as a
// person at a keyboard would, and reads what the program shows through a
// small model of the screen.
//
// The model knows only what the chat itself sends a terminal — text,
// newlines, carriage returns, backspaces, tabs, the bell, and the CSI
// sequences that move the cursor up and erase — and records anything
// else (another escape sequence, a C0 or C1 control, a bidi override)
// as foreign: text from the model or the owner that reached the
// terminal raw instead of escaped.
package chattest
