package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"shelldon/policy"
)

// jailTree is a real directory tree with real links, built fresh for each
// test: a workspace reached through a link, with files, links in and out,
// dangling links, loops, a credential file, and a vault beside it.
type jailTree struct {
	jail    Jail
	base    string // holds everything below
	root    string // the real workspace directory
	outside string // a directory beside the workspace
	vault   string
}

func newJailTree(t testing.TB) jailTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir()) // the temporary directory may itself sit behind a link
	if err != nil {
		t.Fatal(err)
	}
	tree := jailTree{
		base:    base,
		root:    filepath.Join(base, "real-workspace"),
		outside: filepath.Join(base, "outside"),
		vault:   filepath.Join(base, "state", "vault"),
	}
	givenRoot := filepath.Join(base, "workspace")
	tree.jail = Jail{Root: givenRoot, Vault: tree.vault}

	for _, dir := range []string{
		filepath.Join(tree.root, "sub", "nested"),
		filepath.Join(tree.root, "a"),
		filepath.Join(tree.outside, "dir"),
		filepath.Join(tree.outside, "nested"),
		tree.vault,
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(tree.root, "file.txt"):                  "inside",
		filepath.Join(tree.root, "b.txt"):                     "b",
		filepath.Join(tree.root, ".env"):                      "TOKEN=x",
		filepath.Join(tree.root, "sub", "nested", "deep.txt"): "deep inside",
		filepath.Join(tree.outside, "secret.txt"):             "outside",
		filepath.Join(tree.outside, "dir", "passwd"):          "root:x:0:0",
		filepath.Join(tree.outside, "nested", "deep.txt"):     "deep outside",
		filepath.Join(tree.vault, "note"):                     "vault secret",
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		givenRoot:                                "real-workspace",
		filepath.Join(tree.root, "link-in"):      "sub/nested",
		filepath.Join(tree.root, "abs-in"):       filepath.Join(givenRoot, "sub"),
		filepath.Join(tree.root, "abs-in-real"):  filepath.Join(tree.root, "sub"),
		filepath.Join(tree.root, "out-file"):     "../outside/secret.txt",
		filepath.Join(tree.root, "out-file-abs"): filepath.Join(tree.outside, "secret.txt"),
		filepath.Join(tree.root, "out-dir"):      filepath.Join(tree.outside, "dir"),
		filepath.Join(tree.root, "out-and-back"): "../real-workspace/file.txt",
		filepath.Join(tree.root, "dangling-out"): filepath.Join(tree.outside, "new.txt"),
		filepath.Join(tree.root, "dangling-in"):  "sub/new.txt",
		filepath.Join(tree.root, "loop-a"):       "loop-b",
		filepath.Join(tree.root, "loop-b"):       "loop-a",
		filepath.Join(tree.root, "self"):         "self",
		filepath.Join(tree.root, "notes.txt"):    ".env",
		filepath.Join(tree.root, "to-vault"):     tree.vault,
		filepath.Join(tree.root, "sub", "up"):    "..",
		filepath.Join(tree.root, "sub", "up2"):   "../..",
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return tree
}

func TestJailResolveInside(t *testing.T) {
	tree := newJailTree(t)
	tests := []struct {
		path string
		want string // relative to the real root
	}{
		{"file.txt", "file.txt"},
		{"", ""},
		{".", ""},
		{"sub/", "sub"},
		{"sub/nested/deep.txt", "sub/nested/deep.txt"},
		{"./sub/./nested//deep.txt", "sub/nested/deep.txt"},
		{"a/../b.txt", "b.txt"},
		{"new.txt", "new.txt"},
		{"sub/newdir/deeper/new.txt", "sub/newdir/deeper/new.txt"},
		{"link-in/deep.txt", "sub/nested/deep.txt"},
		// ".." after a link goes up from where the link leads, as the kernel does.
		{"link-in/../file.txt", "sub/file.txt"},
		{"abs-in/nested", "sub/nested"},
		{"abs-in-real/nested/deep.txt", "sub/nested/deep.txt"},
		{"sub/up/file.txt", "file.txt"},
		// A dangling link inside resolves to where a write would create the file.
		{"dangling-in", "sub/new.txt"},
		{"notes.env.txt", "notes.env.txt"},
		{"vault", "vault"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := tree.jail.Resolve(tt.path)
			want := filepath.Join(tree.root, tt.want)
			if err != nil || got != want {
				t.Errorf("Resolve(%q) = %q, %v, want %q", tt.path, got, err, want)
			}
		})
	}
}

func TestJailResolveRefuses(t *testing.T) {
	tree := newJailTree(t)
	tests := []struct {
		path    string
		want    error
		message string // a part of the error the owner and the model read
	}{
		{"../x", ErrOutsideWorkspace, `path "../x": leaves the workspace: ".." climbs above the workspace root`},
		{"sub/../../x", ErrOutsideWorkspace, "climbs above"},
		{"..", ErrOutsideWorkspace, "climbs above"},
		{"/etc/passwd", ErrOutsideWorkspace, "absolute paths are refused"},
		{"out-file", ErrOutsideWorkspace, `symbolic link "out-file" points to "../outside/secret.txt", above the workspace root`},
		{"out-file-abs", ErrOutsideWorkspace, `symbolic link "out-file-abs" points to`},
		{"out-dir", ErrOutsideWorkspace, `symbolic link "out-dir" points to`},
		{"out-dir/passwd", ErrOutsideWorkspace, `path "out-dir/passwd": leaves the workspace`},
		{"out-dir/newdir/new.txt", ErrOutsideWorkspace, `symbolic link "out-dir"`},
		{"dangling-out", ErrOutsideWorkspace, `symbolic link "dangling-out"`},
		// The walk never looks outside the root, even on the way back in.
		{"out-and-back", ErrOutsideWorkspace, `symbolic link "out-and-back"`},
		{"sub/up2/x", ErrOutsideWorkspace, `symbolic link "sub/up2" points to "../.."`},
		{"to-vault/note", ErrOutsideWorkspace, `symbolic link "to-vault"`},
		{"loop-a", syscall.ELOOP, "a loop?"},
		{"loop-a/x", syscall.ELOOP, "a loop?"},
		{"self", syscall.ELOOP, "a loop?"},
		{".env", policy.ErrDenied, `path ".env": denied: ".env" is named like an environment file`},
		{"sub/../.ENV", policy.ErrDenied, "environment file"},
		{"keys/server.PEM", policy.ErrDenied, "ends in .pem"},
		{"notes.txt", policy.ErrDenied, `it resolves to ".env"`},
		{"nothere/../file.txt", fs.ErrNotExist, `"nothere" does not exist`},
		{"file.txt/x", syscall.ENOTDIR, `path "file.txt/x": "file.txt/x": not a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := tree.jail.Resolve(tt.path)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Resolve(%q) = %q, %v, want an error wrapping %v", tt.path, got, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("Resolve(%q) error %q, want it to contain %q", tt.path, err, tt.message)
			}
			// A link's target is the workspace's own content; where the
			// workspace lives on the host is not.
			if strings.Contains(err.Error(), tree.root) {
				t.Errorf("Resolve(%q) error %q reveals where the workspace lives", tt.path, err)
			}
		})
	}
}

func TestJailResolveNULByte(t *testing.T) {
	tree := newJailTree(t)
	for _, path := range []string{"a\x00b", "nothere/x\x00y"} {
		if got, err := tree.jail.Resolve(path); err == nil {
			t.Errorf("Resolve(%q) = %q, nil, want an error", path, got)
		}
	}
}

func TestJailResolveRootItselfLink(t *testing.T) {
	tree := newJailTree(t)
	realJail := Jail{Root: tree.root, Vault: tree.vault}
	for _, path := range []string{"file.txt", "link-in/deep.txt", "abs-in-real/nested"} {
		viaLink, errLink := tree.jail.Resolve(path)
		direct, errDirect := realJail.Resolve(path)
		if errLink != nil || errDirect != nil || viaLink != direct {
			t.Errorf("Resolve(%q) = %q, %v through the linked root and %q, %v through the real one, want the same answer",
				path, viaLink, errLink, direct, errDirect)
		}
	}
	// A link that names the workspace by an alias the jail was not given
	// is refused: the jail does not look outside its root to learn aliases.
	if got, err := realJail.Resolve("abs-in"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("Resolve(%q) with the real root = %q, %v, want %v", "abs-in", got, err, ErrOutsideWorkspace)
	}
}

func TestJailResolveBadRoot(t *testing.T) {
	tree := newJailTree(t)
	for _, jail := range []Jail{
		{},
		{Root: filepath.Join(tree.base, "missing")},
		{Root: filepath.Join(tree.root, "file.txt")},
	} {
		if got, err := jail.Resolve("file.txt"); err == nil {
			t.Errorf("Jail{Root: %q}.Resolve(%q) = %q, nil, want an error", jail.Root, "file.txt", got)
		}
	}
}

func TestJailVaultInsideWorkspace(t *testing.T) {
	tree := newJailTree(t)
	hoard := filepath.Join(tree.root, "hoard")
	if err := os.Mkdir(hoard, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hoard, "note"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hoard", filepath.Join(tree.root, "innocent")); err != nil {
		t.Fatal(err)
	}
	vaultLink := filepath.Join(tree.base, "vault-link")
	if err := os.Symlink(hoard, vaultLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		vault string
		path  string
	}{
		{hoard, "hoard"},
		{hoard, "hoard/note"},
		{hoard, "innocent/note"},
		{hoard, "hoard/new.txt"},
		{vaultLink, "hoard/note"},
		{filepath.Join(tree.root, "future-vault"), "future-vault/x"},
	}
	for _, tt := range tests {
		jail := Jail{Root: tree.root, Vault: tt.vault}
		if got, err := jail.Resolve(tt.path); !errors.Is(err, policy.ErrDenied) || !strings.Contains(err.Error(), "vault") {
			t.Errorf("Jail{Vault: %q}.Resolve(%q) = %q, %v, want %v (the vault)", tt.vault, tt.path, got, err, policy.ErrDenied)
		}
	}
	jail := Jail{Root: tree.root, Vault: hoard}
	if got, err := jail.Resolve("file.txt"); err != nil || got != filepath.Join(tree.root, "file.txt") {
		t.Errorf("Jail{Vault: %q}.Resolve(%q) = %q, %v, want the file", hoard, "file.txt", got, err)
	}
}

// TestJailResolveIsOneInstant shows what a resolution can and cannot
// promise when the tree changes after the check.
func TestJailResolveIsOneInstant(t *testing.T) {
	tree := newJailTree(t)
	link := filepath.Join(tree.root, "swap")
	if err := os.Symlink("file.txt", link); err != nil {
		t.Fatal(err)
	}
	resolved, err := tree.jail.Resolve("swap")
	if err != nil || resolved != filepath.Join(tree.root, "file.txt") {
		t.Fatalf("Resolve(%q) = %q, %v, want file.txt", "swap", resolved, err)
	}

	// The link is swapped to point out between the check and the use.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tree.outside, "secret.txt"), link); err != nil {
		t.Fatal(err)
	}
	if got, err := tree.jail.Resolve("swap"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("Resolve(%q) after the swap = %q, %v, want %v", "swap", got, err, ErrOutsideWorkspace)
	}
	// The resolved answer still names the file that was checked...
	if data, err := os.ReadFile(resolved); err != nil || string(data) != "inside" {
		t.Errorf("ReadFile(resolved) = %q, %v, want %q", data, err, "inside")
	}
	// ...while the path as given now follows the new link out: a tool must
	// use the resolved path, never the one it was handed.
	if data, err := os.ReadFile(filepath.Join(tree.root, "swap")); err != nil || string(data) != "outside" {
		t.Errorf("ReadFile(given) = %q, %v, want %q (the swap took effect)", data, err, "outside")
	}

	// Even the resolved path is not safe from a directory on it being
	// swapped for a link: only an open that refuses links (os.Root) is.
	deep, err := tree.jail.Resolve("sub/nested/deep.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tree.root, "sub"), filepath.Join(tree.root, "sub-moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(tree.outside, filepath.Join(tree.root, "sub")); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(deep); err != nil || string(data) != "deep outside" {
		t.Errorf("ReadFile(resolved) after a directory swap = %q, %v, want %q (the race the jail cannot close)", data, err, "deep outside")
	}
	workspace, err := os.OpenRoot(tree.root)
	if err != nil {
		t.Fatal(err)
	}
	defer workspace.Close()
	for _, name := range []string{"swap", "sub/nested/deep.txt"} {
		if file, err := workspace.Open(name); err == nil {
			file.Close()
			t.Errorf("os.Root.Open(%q) after the swap succeeded, want it refused", name)
		}
	}
}

// FuzzJailResolve checks that no path makes Resolve panic or answer with
// a place outside the workspace, on a tree full of links in and out.
func FuzzJailResolve(f *testing.F) {
	for _, seed := range []string{
		"", ".", "..", "file.txt", "a/../b.txt", "link-in/../..", "out-dir/passwd",
		"dangling-out", "dangling-in", "loop-a", "sub/up/sub/up/../file.txt", "sub/up2",
		"abs-in/../../x", "/etc", "nothere/..", "notes.txt", "a\x00", "to-vault/note",
	} {
		f.Add(seed)
	}
	tree := newJailTree(f)
	f.Fuzz(func(t *testing.T, path string) {
		resolved, err := tree.jail.Resolve(path)
		if err != nil {
			return
		}
		rel, err := filepath.Rel(tree.root, resolved)
		if err != nil || !filepath.IsLocal(rel) {
			t.Fatalf("Resolve(%q) = %q, outside the root %q", path, resolved, tree.root)
		}
		if reason, denied := policy.Denied(rel); denied {
			t.Fatalf("Resolve(%q) = %q, which the deny list refuses: %s", path, resolved, reason)
		}
		// The part of the answer that exists holds no link: the kernel
		// finds the file where the jail did.
		existing := resolved
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			existing = filepath.Dir(existing)
		}
		if actual, err := filepath.EvalSymlinks(existing); err != nil || actual != existing {
			t.Fatalf("Resolve(%q) = %q, but its existing part %q really is %q (%v)", path, resolved, existing, actual, err)
		}
	})
}

// BenchmarkJailResolve resolves a path three names deep through a link,
// as a tool's check does for each call.
func BenchmarkJailResolve(b *testing.B) {
	tree := newJailTree(b)
	for b.Loop() {
		if _, err := tree.jail.Resolve("link-in/deep.txt"); err != nil {
			b.Fatal(err)
		}
	}
}
