package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"shelldon/policy"
)

// ErrOutsideWorkspace marks a path that [Jail.Resolve] refuses because it
// leaves the workspace: it is absolute, climbs above the root with "..", or
// goes through a symbolic link whose target lies outside the root (even a
// link whose target does not exist yet, since a write through it would
// create the file out there).
var ErrOutsideWorkspace = errors.New("leaves the workspace")

// jailMaxLinks bounds the symbolic links one resolution follows, as the
// kernel's own limit does, so a loop ends in an error instead of a hang.
const jailMaxLinks = 40

// Jail confines the paths that tools name to one workspace directory and
// keeps the vault and credential-shaped files out of reach.
//
// A resolution is a check at one instant: the file system may change
// between [Jail.Resolve] and the use of its answer. Callers open the
// resolved path it returns, never the path they were given, and should
// open it so that no symbolic link is followed (os.Root, O_NOFOLLOW). The
// sandbox, which mounts only the workspace, is what makes the rest of the
// machine unreachable; the jail is what makes a refusal clear and early.
type Jail struct {
	// Root is the workspace directory. It may itself be a symbolic link.
	Root string
	// Vault is the secrets directory, refused even when it, or a link to
	// it, lies under Root. Empty means there is none.
	Vault string
}

// Resolve returns the real absolute location of path, a path relative to
// the workspace root, after following every symbolic link in it. A path
// that does not exist yet (a new file, a new directory) resolves through
// its deepest existing ancestor. An empty path names the root itself.
//
// Resolve refuses, with an error wrapping [ErrOutsideWorkspace], a path
// that is absolute, climbs above the root, or passes through a link whose
// target leaves the root; the walk never looks outside the root, so a link
// that leaves and comes back is refused too. It refuses, with an error
// wrapping [policy.ErrDenied], a path whose components as given or as resolved
// include a credential-shaped name, and a path that resolves into the
// vault. Other errors say why the path could not be resolved: a loop of
// links (wrapping syscall.ELOOP), ".." after a component that does not
// exist (wrapping fs.ErrNotExist), a file used as a directory.
func (j Jail) Resolve(path string) (string, error) {
	if j.Root == "" {
		return "", errors.New("jail has no workspace root")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("path %q: contains a NUL byte", path)
	}
	if filepath.IsAbs(path) {
		return "", fmt.Errorf("path %q: %w: absolute paths are refused; name it relative to the workspace", path, ErrOutsideWorkspace)
	}
	if reason, denied := policy.Denied(path); denied {
		return "", fmt.Errorf("path %q: %w: %s", path, policy.ErrDenied, reason)
	}
	givenRoot, err := filepath.Abs(j.Root)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w", j.Root, err)
	}
	root, err := filepath.EvalSymlinks(givenRoot)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w", j.Root, err)
	}
	if info, err := os.Stat(root); err != nil {
		return "", fmt.Errorf("workspace root %s: %w", j.Root, err)
	} else if !info.IsDir() {
		return "", fmt.Errorf("workspace root %s: not a directory", j.Root)
	}

	dir, err := Open(root)
	if err != nil {
		return "", fmt.Errorf("workspace root %s: %w", j.Root, err)
	}
	defer dir.Close()
	walk := jailWalk{dir: dir, root: root, givenRoot: givenRoot}
	rel, err := walk.resolve(path)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	relPath := filepath.Join(rel...)
	if reason, denied := policy.Denied(relPath); denied {
		return "", fmt.Errorf("path %q: %w: it resolves to %q, and %s", path, policy.ErrDenied, relPath, reason)
	}
	resolved := filepath.Join(root, relPath)
	if j.Vault != "" {
		vault, err := jailRealPath(j.Vault)
		if err != nil {
			return "", fmt.Errorf("vault %s: %w", j.Vault, err)
		}
		if jailWithin(vault, resolved) {
			return "", fmt.Errorf("path %q: %w: it resolves into the vault", path, policy.ErrDenied)
		}
	}
	return resolved, nil
}

// jailStep is one path component waiting to be walked, with the link whose
// target it came from ("" for the path as given), so that an escape can
// name the link responsible.
type jailStep struct {
	name string
	via  string
}

// jailWalk resolves a path under root one component at a time, reading
// each symbolic link itself rather than asking the kernel, so that the
// target of a dangling link is checked as strictly as that of a live one.
// It looks at the file system only through the root's Root: each look
// is resolved from the root's descriptor and follows no link, so the
// walk and the Root that later opens its answer are one resolver.
type jailWalk struct {
	dir       *Root
	root      string // the real root, free of links
	givenRoot string // the root as configured, which absolute link targets may name
	links     int
}

// resolve returns the components of path's real location below the root.
// Its position never leaves the root: the components it returns are, by
// construction, inside it.
func (w *jailWalk) resolve(path string) ([]string, error) {
	pending := jailSteps(path, "")
	var rel []string
	missing := "" // the first component found not to exist; nothing below it can be a link
	for len(pending) > 0 {
		step := pending[0]
		pending = pending[1:]
		if step.name == ".." {
			switch {
			case missing != "":
				return nil, fmt.Errorf("%q does not exist, so \"..\" after it cannot be resolved: %w", missing, fs.ErrNotExist)
			case len(rel) == 0 && step.via != "":
				return nil, fmt.Errorf("%w: %s, above the workspace root", ErrOutsideWorkspace, step.via)
			case len(rel) == 0:
				return nil, fmt.Errorf("%w: \"..\" climbs above the workspace root", ErrOutsideWorkspace)
			}
			rel = rel[:len(rel)-1]
			continue
		}
		rel = append(rel, step.name)
		if missing != "" {
			continue
		}
		relPath := filepath.Join(rel...)
		info, err := w.dir.Lstat(filepath.ToSlash(relPath))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = relPath
			continue
		case err != nil:
			return nil, jailRelError(relPath, err)
		case info.Mode()&fs.ModeSymlink == 0:
			continue
		}
		rel = rel[:len(rel)-1]
		next, restart, err := w.follow(relPath)
		if err != nil {
			return nil, err
		}
		if restart {
			rel = rel[:0]
		}
		pending = append(next, pending...)
	}
	return rel, nil
}

// follow reads the link at relPath and returns the steps of its target.
// restart reports that the target is absolute, so the walk goes on from
// the root rather than from the link's directory.
func (w *jailWalk) follow(relPath string) (steps []jailStep, restart bool, err error) {
	w.links++
	if w.links > jailMaxLinks {
		return nil, false, fmt.Errorf("more than %d symbolic links (a loop?) at %q: %w", jailMaxLinks, relPath, syscall.ELOOP)
	}
	target, err := w.dir.Readlink(filepath.ToSlash(relPath))
	if err != nil {
		return nil, false, jailRelError(relPath, err)
	}
	via := fmt.Sprintf("symbolic link %q points to %q", relPath, target)
	if !filepath.IsAbs(target) {
		return jailSteps(target, via), false, nil
	}
	for _, base := range []string{w.root, w.givenRoot} {
		if below, ok := jailStrip(base, target); ok {
			return jailSteps(below, via), true, nil
		}
	}
	return nil, false, fmt.Errorf("%w: %s", ErrOutsideWorkspace, via)
}

// jailSteps splits a slash-separated path into the steps to walk, leaving
// out empty and "." components; ".." stays, for the walk to apply.
func jailSteps(path, via string) []jailStep {
	var steps []jailStep
	for _, name := range strings.Split(path, "/") {
		if name != "" && name != "." {
			steps = append(steps, jailStep{name: name, via: via})
		}
	}
	return steps
}

// jailStrip returns what follows base in the absolute path target,
// comparing whole components and leaving any ".." in place for the walk
// (cleaning it lexically could disagree with the links it crosses).
func jailStrip(base, target string) (string, bool) {
	baseSteps := jailSteps(base, "")
	targetSteps := jailSteps(target, "")
	if len(targetSteps) < len(baseSteps) {
		return "", false
	}
	for i, step := range baseSteps {
		if targetSteps[i].name != step.name {
			return "", false
		}
	}
	names := make([]string, 0, len(targetSteps)-len(baseSteps))
	for _, step := range targetSteps[len(baseSteps):] {
		names = append(names, step.name)
	}
	return strings.Join(names, "/"), true
}

// jailRelError restates a file system error about a component relative to
// the root, so that refusals shown to the model do not reveal where the
// workspace lives on the host.
func jailRelError(relPath string, err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return fmt.Errorf("%q: %w", relPath, pathErr.Err)
	}
	return fmt.Errorf("%q: %w", relPath, err)
}

// jailRealPath returns where path really is: its deepest existing ancestor
// with links resolved, joined with the part that does not exist yet.
func jailRealPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	existing, rest := abs, ""
	for {
		resolved, err := filepath.EvalSymlinks(existing)
		if err == nil {
			return filepath.Join(resolved, rest), nil
		}
		parent := filepath.Dir(existing)
		if !errors.Is(err, fs.ErrNotExist) || parent == existing {
			return "", err
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

// jailWithin reports whether path is dir or lies below it; both are clean
// absolute paths.
func jailWithin(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}
