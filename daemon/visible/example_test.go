package visible_test

import (
	"fmt"

	"shelldon/daemon/visible"
)

// A write_file whose content would erase the line and draw a different
// approval is shown with its escapes visible; the lines stay lines.
func ExampleText() {
	fmt.Println(visible.Text("hello\n\x1b[2K\rwrites 5 bytes to notes.txt\tok"))
	fmt.Println(visible.Text("evil\u202etxt.py"))
	// Output:
	// hello
	// \x1b[2K\rwrites 5 bytes to notes.txt	ok
	// evil<U+202E>txt.py
}

// Each word of a command reads as one word, and a newline in an
// argument cannot pass for the start of another command.
func ExampleArgv() {
	fmt.Println(visible.Argv([]string{"rm", "my file", "notes.txt"}))
	fmt.Println(visible.Argv([]string{"rm", "my", "file", "notes.txt"}))
	fmt.Println(visible.Argv([]string{"git", "commit", "-m", "it's done\nrm -rf ~", ""}))
	fmt.Println(visible.Argv([]string{"cat", "evil\u202etxt.py"}))
	// Output:
	// rm 'my file' notes.txt
	// rm my file notes.txt
	// git commit -m $'it\'s done\nrm -rf ~' ''
	// cat $'evil\u202etxt.py'
}
