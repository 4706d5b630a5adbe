package policy

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
)

// MaxChangeSetBytes is the most a change set may write before the owner
// must see it as a request of its own: more than a command's routine
// output, and a way to fill the board's card.
const MaxChangeSetBytes = 32 << 20

// MaxChangeSetPaths is the most paths one approved command may bring
// into the workspace. Past it the change set is refused whole, not
// asked about: thousands of paths cannot be looked at one by one, so a
// second request would ask for a tap on what nobody read, and keeping
// the set for it would write all of it to the board's card first, as
// applying it would (20,000 files took a minute and a half here, more on
// a card). Below it, an ordinary project — a clone's working tree, an
// unpacked archive — fits.
const MaxChangeSetPaths = 2000

// FileChange is one path an approved command changed, as the sandbox
// found it in the upper layer of its captured view.
type FileChange struct {
	// Path is slash-separated and relative to the workspace root.
	Path    string
	Deleted bool
	// Type is the entry's type after the change: 0 for a regular file,
	// fs.ModeDir, fs.ModeSymlink, or a special file's type.
	Type fs.FileMode
	// Size is a regular file's size.
	Size int64
	// Sparse marks a regular file with holes: it takes less room in the
	// upper layer than its size, and a copy could take all of it.
	Sparse bool
	// Target is a symbolic link's target.
	Target string
	// PytestConfig says the new content configures pytest (see
	// [PytestConfig]); the caller reads the file to say so.
	PytestConfig bool
}

// ChangeSetRisks applies the rule for what an approved command may change
// without a second look: a change set that touches what makes git or
// Python run code (git's config and hooks, conftest.py, sitecustomize.py,
// usercustomize.py, *.pth, pytest's configuration), a skill's
// instructions (IsSkillFile), a credential-shaped
// name, a symbolic link, a special or sparse file, or that writes more
// than [MaxChangeSetBytes], is shown to the owner as a request of its own
// before anything of it is applied. The result says why, one line per
// reason, each naming the paths; none means the set may be applied at
// once (and reported).
func ChangeSetRisks(changes []FileChange) []string {
	reasons := map[string][]string{}
	var written int64
	for _, c := range changes {
		add := func(why string) { reasons[why] = append(reasons[why], c.Path) }
		if why := gitInternals(c); why != "" {
			add(why)
		}
		if why := pythonHook(c); why != "" {
			add(why)
		}
		if !c.Deleted && IsSkillFile(c.Path) {
			add("a skill's instructions (SKILL.md), which every turn's prompt offers the model")
		}
		if _, denied := Denied(c.Path); denied {
			add("named like a credential")
		}
		if c.Deleted {
			continue
		}
		switch {
		case c.Type == fs.ModeSymlink:
			add("a symbolic link")
		case c.Type != 0 && c.Type != fs.ModeDir:
			add("a special file (device, fifo or socket)")
		case c.Type == 0 && c.Sparse:
			add("a sparse file, which would take its whole size on the card")
		}
		if c.Type == 0 {
			written += c.Size
		}
	}
	var out []string
	for _, why := range slices.Sorted(maps.Keys(reasons)) {
		out = append(out, why+": "+listPaths(reasons[why]))
	}
	if written > MaxChangeSetBytes {
		out = append(out, fmt.Sprintf("it writes %d MiB, more than the %d MiB applied without asking", (written+(1<<20)-1)>>20, MaxChangeSetBytes>>20))
	}
	return out
}

// ChangeSetTooLarge applies the rule for how much one approved command
// may change: at most [MaxChangeSetPaths] paths. It says why a set is
// refused, "" when it is not.
func ChangeSetTooLarge(changes []FileChange) string {
	if len(changes) <= MaxChangeSetPaths {
		return ""
	}
	return fmt.Sprintf("it changed %d paths, more than the %d one approved command may bring into the workspace", len(changes), MaxChangeSetPaths)
}

// gitInternals says why a change inside a .git directory (at any depth,
// for nested repositories) lets git run something: its configuration
// (core.fsmonitor, filters, aliases, hooksPath), its hooks, and the files
// that point git at another repository. A regular file named .git is a
// gitdir pointer to another repository's internals.
func gitInternals(c FileChange) string {
	parts := strings.Split(c.Path, "/")
	for i, p := range parts {
		if p != ".git" {
			continue
		}
		if i == len(parts)-1 {
			if !c.Deleted && c.Type != fs.ModeDir {
				return "a .git file pointing git at another repository"
			}
			return ""
		}
		switch next := parts[i+1]; {
		case next == "config", next == "config.worktree":
			return "git's configuration, which can make git run commands"
		case next == "hooks":
			return "git hooks, which git runs"
		case next == "modules", next == "worktrees":
			return "the configuration or hooks of a nested git repository"
		case next == "commondir", next == "gitdir", next == "info" && len(parts) > i+2 && parts[i+2] == "attributes",
			next == "objects" && len(parts) > i+3 && parts[i+2] == "info" && parts[i+3] == "alternates":
			return "git's pointers to other repositories and attributes"
		}
	}
	return ""
}

// pythonHook says why a change installs code Python or pytest runs by
// itself, before any test of the owner's: at start-up (sitecustomize,
// usercustomize, .pth files), or on collection (conftest.py, pytest's
// configuration with its plugins and options).
func pythonHook(c FileChange) string {
	if c.Deleted {
		return ""
	}
	name := path.Base(c.Path)
	switch {
	case name == "conftest.py":
		return "pytest's conftest.py, which every test run imports"
	case name == "sitecustomize.py", name == "usercustomize.py", strings.HasSuffix(name, ".pth"):
		return "a Python start-up hook, which every Python process runs"
	case name == "pytest.ini", name == ".pytest.ini", c.PytestConfig:
		return "pytest's configuration, which chooses its plugins and options"
	}
	return ""
}

// pytestSections are the sections of the shared configuration files that
// pytest reads, by file name.
var pytestSections = lazy[map[string][]string]{build: func() map[string][]string {
	return map[string][]string{
		"pyproject.toml": {"[tool.pytest.ini_options]", "[tool.pytest]"},
		"tox.ini":        {"[pytest]"},
		"setup.cfg":      {"[tool:pytest]"},
	}
}}

// PytestConfig reports whether a file named name (its base name) with
// content configures pytest: pytest.ini and .pytest.ini always do; the
// shared files (pyproject.toml, tox.ini, setup.cfg) when they hold
// pytest's section.
func PytestConfig(name string, content []byte) bool {
	if name == "pytest.ini" || name == ".pytest.ini" {
		return true
	}
	for _, line := range bytes.Split(content, []byte("\n")) {
		line = bytes.TrimSpace(line)
		for _, section := range pytestSections.get()[name] {
			if bytes.HasPrefix(line, []byte(section)) {
				return true
			}
		}
	}
	return false
}

// LinkEscapes reports whether a symbolic link at linkPath (relative to
// the workspace root) with target leads out of the workspace: an absolute
// target, or one whose ".." climb above the root from the link's
// directory. It reads the target as written, without the file system: a
// link is judged before it exists.
func LinkEscapes(linkPath, target string) bool {
	if target == "" || path.IsAbs(target) || strings.IndexByte(target, 0) >= 0 {
		return true
	}
	depth := strings.Count(path.Clean(path.Dir(linkPath)), "/") + 1
	if path.Dir(linkPath) == "." {
		depth = 0
	}
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// listPaths names up to five paths, then says how many more.
func listPaths(paths []string) string {
	const shown = 5
	if len(paths) <= shown {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:shown], ", "), len(paths)-shown)
}

// The Agent Skills the pet offers the model live in the workspace, one
// folder each under SkillsDir, with their instructions in SkillFile.
const (
	SkillsDir = "skills"
	SkillFile = "SKILL.md"
)

// IsSkillFile reports whether the workspace path p (slash-separated,
// relative) is a skill's instructions, skills/<name>/SKILL.md: what every
// turn's prompt names, so a change to one has the owner's second look.
func IsSkillFile(p string) bool {
	parts := strings.Split(path.Clean(p), "/")
	return len(parts) == 3 && parts[0] == SkillsDir && parts[2] == SkillFile
}
