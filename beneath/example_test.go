package beneath_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"shelldon/beneath"
)

// A sandboxed command has planted tools-staging, a link out of the
// workspace; core, running as root, writes through the workspace's Root.
func Example() {
	workspace, outside := tempDir(), tempDir()
	defer os.RemoveAll(workspace)
	defer os.RemoveAll(outside)
	if err := os.Symlink(outside, filepath.Join(workspace, "tools-staging")); err != nil {
		log.Fatal(err)
	}

	root, err := beneath.Open(workspace)
	if err != nil {
		log.Fatal(err)
	}
	defer root.Close()

	err = root.WriteFile("tools-staging/passwd", []byte("root::0:0::/root:/bin/sh\n"), 0o644)
	fmt.Println(err)
	fmt.Println(errors.Is(err, beneath.ErrLink))

	if err := root.MkdirAll("notes", 0o755); err != nil {
		log.Fatal(err)
	}
	if err := root.WriteFile("notes/today", []byte("fed the pet"), 0o644); err != nil {
		log.Fatal(err)
	}
	data, err := root.ReadFile("notes/today", 1<<10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))
	// Output:
	// write tools-staging/passwd: a symbolic link is in the way
	// true
	// fed the pet
}

func tempDir() string {
	dir, err := os.MkdirTemp("", "beneath-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir
}
