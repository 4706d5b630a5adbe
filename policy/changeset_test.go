package policy

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestChangeSetRisks(t *testing.T) {
	file := func(p string, size int64) FileChange { return FileChange{Path: p, Size: size} }
	cases := []struct {
		name    string
		changes []FileChange
		want    string // a substring of the joined reasons; "" for none
	}{
		{"plain files", []FileChange{file("notes.txt", 5), file("src/app.py", 900), {Path: "src", Type: fs.ModeDir}}, ""},
		{"a deletion", []FileChange{{Path: "old.txt", Deleted: true}}, ""},
		{"git objects from a commit", []FileChange{file(".git/objects/ab/cdef", 80), file(".git/refs/heads/main", 41), file(".git/index", 300), file(".git/COMMIT_EDITMSG", 9)}, ""},
		{"git config", []FileChange{file(".git/config", 50)}, "git's configuration"},
		{"a git hook", []FileChange{file(".git/hooks/pre-commit", 50)}, "git hooks"},
		{"a nested repository's hook", []FileChange{file("vendor/lib/.git/hooks/post-checkout", 50)}, "git hooks"},
		{"a submodule's config", []FileChange{file(".git/modules/lib/config", 50)}, "nested git repository"},
		{"a gitdir pointer", []FileChange{file("sub/.git", 30)}, "another repository"},
		{"attributes", []FileChange{file(".git/info/attributes", 30)}, "attributes"},
		{"alternates", []FileChange{file(".git/objects/info/alternates", 30)}, "other repositories"},
		{"conftest", []FileChange{file("tests/conftest.py", 30)}, "conftest.py"},
		{"sitecustomize", []FileChange{file("sitecustomize.py", 30)}, "start-up hook"},
		{"a .pth file", []FileChange{file("lib/evil.pth", 30)}, "start-up hook"},
		{"pytest.ini", []FileChange{file("pytest.ini", 30)}, "pytest's configuration"},
		{"pyproject with a pytest section", []FileChange{{Path: "pyproject.toml", Size: 30, PytestConfig: true}}, "pytest's configuration"},
		{"pyproject without one", []FileChange{file("pyproject.toml", 30)}, ""},
		{"a deleted conftest", []FileChange{{Path: "conftest.py", Deleted: true}}, ""},
		{"a new skill", []FileChange{file("skills/deploy/SKILL.md", 300), file("skills/deploy/run.sh", 80)}, "a skill's instructions"},
		{"a skill's script alone", []FileChange{file("skills/deploy/run.sh", 80)}, ""},
		{"a SKILL.md outside skills/", []FileChange{file("docs/SKILL.md", 300), file("skills/a/b/SKILL.md", 30)}, ""},
		{"a deleted skill", []FileChange{{Path: "skills/deploy/SKILL.md", Deleted: true}}, ""},
		{"a credential", []FileChange{file(".netrc.pem", 30)}, "credential"},
		{"a symbolic link", []FileChange{{Path: "tools-staging", Type: fs.ModeSymlink, Target: "/etc"}}, "symbolic link"},
		{"a fifo", []FileChange{{Path: "pipe", Type: fs.ModeNamedPipe}}, "special file"},
		{"a sparse file", []FileChange{{Path: "big.img", Size: 1 << 30, Sparse: true}}, "sparse"},
		{"over the size cap", []FileChange{file("a.bin", 20<<20), file("b.bin", 13<<20)}, "writes 33 MiB"},
		{"at the size cap", []FileChange{file("a.bin", 32<<20)}, ""},
	}
	for _, tc := range cases {
		got := strings.Join(ChangeSetRisks(tc.changes), "\n")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: ChangeSetRisks(%+v) = %q, want %q", tc.name, tc.changes, got, tc.want)
		}
	}
}

func TestChangeSetRisksNamePaths(t *testing.T) {
	var changes []FileChange
	for _, p := range []string{"a/conftest.py", "b/conftest.py", "c/conftest.py", "d/conftest.py", "e/conftest.py", "f/conftest.py", "g/conftest.py"} {
		changes = append(changes, FileChange{Path: p})
	}
	got := ChangeSetRisks(changes)
	if len(got) != 1 || !strings.Contains(got[0], "a/conftest.py, b/conftest.py") || !strings.HasSuffix(got[0], "and 2 more") {
		t.Errorf("ChangeSetRisks(7 conftests) = %q, want one reason naming five and counting two more", got)
	}
}

func TestPytestConfig(t *testing.T) {
	cases := []struct {
		name, content string
		want          bool
	}{
		{"pytest.ini", "", true},
		{".pytest.ini", "", true},
		{"pyproject.toml", "[project]\nname = \"x\"\n", false},
		{"pyproject.toml", "[project]\n\n  [tool.pytest.ini_options]\naddopts = \"-p evil\"\n", true},
		{"pyproject.toml", "[tool.pytest]\n", true},
		{"tox.ini", "[tox]\n[pytest]\naddopts = -p x\n", true},
		{"tox.ini", "[tox]\nenvlist = py3\n", false},
		{"setup.cfg", "[tool:pytest]\n", true},
		{"setup.cfg", "[metadata]\n", false},
		{"notes.txt", "[pytest]\n", false},
	}
	for _, tc := range cases {
		if got := PytestConfig(tc.name, []byte(tc.content)); got != tc.want {
			t.Errorf("PytestConfig(%q, %q) = %v, want %v", tc.name, tc.content, got, tc.want)
		}
	}
}

func TestLinkEscapes(t *testing.T) {
	cases := []struct {
		link, target string
		want         bool
	}{
		{"a", "b", false},
		{"a", "/etc/passwd", true},
		{"a", "..", true},
		{"a", "../x", true},
		{"dir/a", "../x", false},
		{"dir/a", "../../x", true},
		{"dir/a", "./sub/../../x", false},
		{"dir/a", "sub/../../../x", true},
		{"d/e/a", "../../f", false},
		{"a", "", true},
		{"a", "x\x00y", true},
	}
	for _, tc := range cases {
		if got := LinkEscapes(tc.link, tc.target); got != tc.want {
			t.Errorf("LinkEscapes(%q, %q) = %v, want %v", tc.link, tc.target, got, tc.want)
		}
	}
}

func TestChangeSetTooLarge(t *testing.T) {
	many := make([]FileChange, MaxChangeSetPaths)
	for i := range many {
		many[i] = FileChange{Path: fmt.Sprintf("many/%d", i)}
	}
	if why := ChangeSetTooLarge(many); why != "" {
		t.Errorf("ChangeSetTooLarge(%d paths) = %q, want none: the bound itself fits", len(many), why)
	}
	many = append(many, FileChange{Path: "many", Type: fs.ModeDir})
	if why := ChangeSetTooLarge(many); !strings.Contains(why, "2001 paths") || !strings.Contains(why, "2000") {
		t.Errorf("ChangeSetTooLarge(%d paths) = %q, want it refused, saying how many and the bound", len(many), why)
	}
}
