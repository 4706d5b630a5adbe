package approval_test

import (
	"fmt"
	"io/fs"

	"shelldon/daemon/approval"
	"shelldon/sandbox"
)

// A change set that waits for the owner's own look is shown as why it
// waits and every change it makes, with sizes and link targets.
func ExampleRenderChangeSet() {
	shown := approval.RenderChangeSet(approval.ChangeSetPayload{
		Tool: "run_shell",
		Changes: []sandbox.Change{
			{Path: "notes/todo.md", Kind: sandbox.Modified, Perm: 0o644, Size: 120},
			{Path: "tests/conftest.py", Kind: sandbox.Created, Perm: 0o644, Size: 48},
			{Path: "latest", Kind: sandbox.Created, Type: fs.ModeSymlink, Target: "notes/todo.md"},
			{Path: "old.txt", Kind: sandbox.Deleted},
		},
		Risks: []string{"tests/conftest.py is loaded by every pytest run"},
	})
	fmt.Println(shown.Title)
	fmt.Println(shown.Note)
	fmt.Println(shown.Detail)
	// Output:
	// the changes of run_shell
	// run_shell, run with your approval, changed 4 path(s), some of which need your own look before I apply them
	// why:
	//   tests/conftest.py is loaded by every pytest run
	// changes:
	//   modified notes/todo.md (120 bytes)
	//   created  tests/conftest.py (48 bytes)
	//   created  latest -> notes/todo.md (symbolic link)
	//   deleted  old.txt
}
