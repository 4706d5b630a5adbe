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

// A tool names paths relative to the workspace: a link that stays inside
// is followed, one that leads out is refused, and so are the deny list's
// names, even reached through a link.
func ExampleJail_Resolve() {
	workspace := tempDir()
	defer os.RemoveAll(workspace)
	for _, dir := range []string{"notes/2026", "src"} {
		if err := os.MkdirAll(filepath.Join(workspace, dir), 0o755); err != nil {
			log.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"latest":    "notes/2026",      // stays inside
		"etc":       "../outside",      // leads out
		"src/creds": "../.env.example", // inside, but credential-shaped
	} {
		if err := os.Symlink(target, filepath.Join(workspace, link)); err != nil {
			log.Fatal(err)
		}
	}

	jail := beneath.Jail{Root: workspace}
	for _, path := range []string{"latest/today.md", "etc/passwd", "../x", "/etc/passwd", "src/creds", "id_ed25519"} {
		resolved, err := jail.Resolve(path)
		if err != nil {
			fmt.Println(err)
			continue
		}
		rel, _ := filepath.Rel(workspace, resolved)
		fmt.Printf("%s -> %s\n", path, rel)
	}
	// Output:
	// latest/today.md -> notes/2026/today.md
	// path "etc/passwd": leaves the workspace: symbolic link "etc" points to "../outside", above the workspace root
	// path "../x": leaves the workspace: ".." climbs above the workspace root
	// path "/etc/passwd": leaves the workspace: absolute paths are refused; name it relative to the workspace
	// path "src/creds": denied: it resolves to ".env.example", and ".env.example" is named like an environment file, which holds secrets
	// path "id_ed25519": denied: "id_ed25519" is named like an SSH key (id_*)
}
