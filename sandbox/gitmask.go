package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/beneath"
)

// What a credential-shaped file held lives on in git's objects when the
// owner's repository tracked it, even for a moment, and the whiteouts of
// the mask hide only the working tree's copy. So for every repository in
// the workspace (a directory holding HEAD, objects and refs: .git, a
// submodule's git directory, a bare repository) the mask layer also
//
//   - replaces, for git, every blob a credential-shaped path
//     ([policy.Denied]) held anywhere in the repository's history, index,
//     stash or reflogs, and every blob no commit or index reaches, whose
//     path nobody can tell (a file staged once, then unstaged), by
//     a blob that says it is masked: a replace ref each
//     (refs/replace/<blob>), which every view of git's follows — diff,
//     show, log -p, cat-file, grep, blame, pickaxe, --text and --binary,
//     a blob named by its object name;
//   - hides the object store from every other program: the repository's
//     objects directory is an opaque one holding the masked blobs'
//     replacements and an alternates file, and the real objects are
//     mounted read-only at a path outside the workspace whose name
//     changes every run, which git reads through the alternates file. A command that reads the
//     workspace (grep -r, cat .git/objects/…, python walking the tree)
//     finds no object; one that names the real store names an absolute
//     path, which the policy asks about.
//
// Every run's git gets core.useReplaceRefs=true on its command line (the
// repository's configuration cannot turn the replacements off) and
// gc.auto=0 (an approved commit does not repack the owner's objects, nor
// pack the mask's refs into packed-refs).
//
// Which blobs to mask takes a walk through the repository's history, done
// by git itself in a container of its own over the masked workspace (the
// look) and kept, per repository, for as long as the repository's state
// — every file and directory of its git directory but the objects, whose
// directories say when objects come and go — stays the same: runs pay the
// walk only after something changed the repository.
//
// What this does not cover: git's objects as stored are still what an
// approved program reads when it opens the real store by its path (the
// alternates file names it): that is a program the owner approved, whose
// card shows it. Alternates of the owner's own (objects/info/alternates in
// the real store) are not followed in the sandbox. Git's own refusal to
// replace (git --no-replace-objects, GIT_NO_REPLACE_OBJECTS, cat-file
// --batch-all-objects) is the policy's to ask about.

// Bounds of the masks of git's history.
const (
	// maxGitRepos is how many repositories of one workspace are looked
	// through; the objects of the others are hidden from the run.
	maxGitRepos = 16
	// maxGitStateEntries bounds the entries of one git directory whose
	// state says whether its look still holds (the objects themselves
	// are not counted).
	maxGitStateEntries = 50_000
	// maxMaskedBlobs bounds the blobs one repository masks: each is a
	// replace ref every run writes. A repository with more hides its
	// objects from the run, until `git gc --prune=now` drops the blobs
	// nothing reaches.
	maxMaskedBlobs = 10_000
	// gitLookOutput is the most the look may print: a masked blob's name
	// and a credential path's record each take some tens of bytes.
	gitLookOutput = 4 << 20
	// gitLookWall is the longest the look may take.
	gitLookWall = 60 * time.Second
	// maxCachedLooks is how many repositories' looks are kept.
	maxCachedLooks = 32
)

// gitMaskedContent is what git shows of a masked blob, named in it: two
// versions of a masked file still differ, so that a diff says the file
// changed, not how.
const gitMaskedContent = "[masked by shelldon: blob %.12s, which a file named like a credential held, or which nothing in this repository's history names]\n"

// gitPlainCopies are where a git directory keeps what files held outside
// its objects, as text: the message of a `git commit -v` with the diff
// below it, the patch a stopped rebase or git am applies, the conflicted
// files rerere remembers. The mask layer hides them, as it cannot mask
// what in them a credential held: the sandbox's git then knows of no
// rebase or am in progress, and remembers no resolution.
var gitPlainCopies = []string{"COMMIT_EDITMSG", "rebase-merge/patch", "rebase-apply", "rr-cache"}

// gitReplaceConfig is every run's git configuration: replacements on
// whatever the repository says, and no automatic gc.
var gitReplaceConfig = []string{
	"GIT_CONFIG_COUNT=2",
	"GIT_CONFIG_KEY_0=core.useReplaceRefs", "GIT_CONFIG_VALUE_0=true",
	"GIT_CONFIG_KEY_1=gc.auto", "GIT_CONFIG_VALUE_1=0",
}

// gitObjectsMount is where a run finds the real object stores, under a
// directory named anew for every run.
const gitObjectsMount = "/run/shelldon-objects-"

// gitDirEntries notes, while a directory is listed, the entries that make
// it a git directory: HEAD, objects and refs.
type gitDirEntries struct{ head, objects, refs bool }

func (g *gitDirEntries) see(e fs.DirEntry) {
	switch e.Name() {
	case "HEAD":
		g.head = e.Type().IsRegular()
	case "objects":
		g.objects = e.IsDir()
	case "refs":
		g.refs = e.IsDir()
	}
}

func (g gitDirEntries) complete() bool { return g.head && g.objects && g.refs }

// gitMasks are what a run's mask layer says of its repositories.
type gitMasks struct {
	binds []Bind   // the real object stores, read-only
	env   []string // gitReplaceConfig, when there are repositories
	// written are the files the mask layer holds for git, by path in the
	// workspace: a captured run's changes to them are not the command's.
	written []string
	// refs are the replace refs written, by repository.
	refs map[string][]string
	// withheld are the repositories whose objects are hidden, and why.
	withheld []string
}

// maskGit looks through the repositories the mask found (a look is run
// for those whose state changed since their last) and adds their masks to
// the mask layer; it must run before the layer is mounted.
func (s *Sandbox) maskGit(ctx context.Context, fsys *runFS, ws string, o owner, mask string, repos []string, spec Spec, id string) (gitMasks, error) {
	var g gitMasks
	if len(repos) == 0 {
		return g, nil
	}
	root, err := beneath.Open(ws)
	if err != nil {
		return g, fmt.Errorf("%w: %v", ErrWorkspace, err)
	}
	defer root.Close()
	looks := make([]gitLook, len(repos))
	states := make([][sha256.Size]byte, len(repos))
	var unknown []int
	for i, rel := range repos {
		if i >= maxGitRepos {
			looks[i].err = fmt.Errorf("the workspace holds more than %d git repositories, and only the first %d are looked through for credentials", maxGitRepos, maxGitRepos)
			continue
		}
		if states[i], err = gitRepoState(root, rel); err != nil {
			looks[i].err = err
			continue
		}
		var ok bool
		if looks[i], ok = s.looks.get(ws+"\x00"+rel, states[i]); !ok {
			unknown = append(unknown, i)
		}
	}
	if len(unknown) > 0 {
		looked, err := s.lookThroughGit(ctx, fsys, ws, o, mask, repos, unknown, spec, id)
		if err != nil {
			return g, err
		}
		for _, i := range unknown {
			looks[i] = looked[i]
			s.looks.put(ws+"\x00"+repos[i], states[i], looks[i])
		}
	}
	run := make([]byte, 8)
	rand.Read(run)
	mount := gitObjectsMount + hex.EncodeToString(run)
	layer := &gitLayer{dir: mask, ws: root, touched: map[string]bool{}}
	g.env = gitReplaceConfig
	g.refs = map[string][]string{}
	for i, rel := range repos {
		look := looks[i]
		if look.err != nil {
			s.log.Warn("git's objects are hidden from this run: the sandbox could not tell which of them hold credentials",
				"repository", rel, "err", look.err)
			g.withheld = append(g.withheld, fmt.Sprintf("git's objects of %s were hidden from this run: %v", rel, look.err))
		}
		target := fmt.Sprintf("%s/%d", mount, i)
		written, err := layer.maskRepo(rel, look, target)
		if err != nil {
			return g, fmt.Errorf("mask git's objects in %s: %w", rel, err)
		}
		g.written = append(g.written, written...)
		if look.err != nil {
			continue
		}
		g.refs[rel] = look.masked
		objects, err := root.OpenDir(path.Join(rel, "objects"))
		if err != nil {
			return g, fmt.Errorf("%w: %v", ErrWorkspace, err)
		}
		// The store is mounted through the descriptor opened beneath the
		// workspace, so no link swapped in since the look leads elsewhere.
		empty, err := fsys.mkdir(fmt.Sprintf("git-empty-%d", i), 0o755, o)
		if err == nil {
			var mounted string
			mounted, err = fsys.overlay(fmt.Sprintf("git-objects-%d", i), []string{fmt.Sprintf("/proc/self/fd/%d", objects.Fd()), empty}, "", "")
			g.binds = append(g.binds, Bind{Source: mounted, Target: target})
		}
		objects.Close()
		if err != nil {
			return g, err
		}
	}
	if err := layer.restoreTimes(); err != nil {
		return g, err
	}
	return g, nil
}

// emptyPlainDir reports whether rel is an empty directory that is not
// opaque: one the overlay merely copied up, whose removal leaves the
// merged view as it was.
func emptyPlainDir(root *beneath.Root, rel string) (bool, error) {
	f, err := root.OpenDir(rel)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if names, err := f.Readdirnames(1); len(names) > 0 || !errors.Is(err, io.EOF) {
		return false, err
	}
	var opaque [1]byte
	_, err = unix.Fgetxattr(int(f.Fd()), xattrOpaque, opaque[:])
	return errors.Is(err, unix.ENODATA), nil
}

// gitLayer writes git's masks into a mask layer, each directory it makes
// like the workspace's it covers.
type gitLayer struct {
	dir     string        // the mask layer
	ws      *beneath.Root // the workspace
	touched map[string]bool
}

// maskRepo writes the masks of the repository rel that look found: its
// objects directory opaque, holding the masked blob and an alternates
// file that leads to objects (nothing, when the look failed), and a
// replace ref for each masked blob. It returns the paths it wrote.
func (l *gitLayer) maskRepo(rel string, look gitLook, objects string) ([]string, error) {
	for _, copied := range gitPlainCopies {
		if err := l.hide(path.Join(rel, copied)); err != nil {
			return nil, err
		}
	}
	dir := path.Join(rel, "objects")
	if err := l.mkdirAll(dir); err != nil {
		return nil, err
	}
	if err := unix.Setxattr(filepath.Join(l.dir, dir), xattrOpaque, []byte("y"), 0); err != nil {
		return nil, fmt.Errorf("make %s opaque: %w", dir, err)
	}
	if look.err != nil {
		return nil, nil
	}
	owner, err := l.ownerOf(rel)
	if err != nil {
		return nil, err
	}
	var written []string
	write := func(rel string, content []byte, perm uint32) error {
		if err := l.mkdirAll(path.Dir(rel)); err != nil {
			return err
		}
		p := filepath.Join(l.dir, rel)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Lchown(p, int(owner.uid), int(owner.gid)); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Chmod(p, perm); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		written = append(written, rel)
		return nil
	}
	if err := write(path.Join(dir, "info", "alternates"), []byte(objects+"\n"), 0o644); err != nil {
		return nil, err
	}
	for _, r := range look.replacements {
		if err := write(path.Join(dir, r.name[:2], r.name[2:]), r.object, 0o444); err != nil {
			return nil, err
		}
		if err := write(path.Join(rel, "refs", "replace", r.masked), []byte(r.name+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return written, nil
}

// hide puts a whiteout at rel in the layer, where the workspace has
// something there.
func (l *gitLayer) hide(rel string) error {
	if _, err := l.ws.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("mask layer: %w", err)
	}
	if err := l.mkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	p := filepath.Join(l.dir, rel)
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("mask layer: %w", err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("hide %q: %w", rel, err)
	}
	return nil
}

// ownerOf is who owns the workspace's directory rel.
func (l *gitLayer) ownerOf(rel string) (owner, error) {
	info, err := l.ws.Lstat(rel)
	if err != nil {
		return owner{}, err
	}
	st := info.Sys().(*syscall.Stat_t)
	return owner{uid: st.Uid, gid: st.Gid}, nil
}

// mkdirAll makes the directory rel in the layer and those above it that
// the layer lacks, each with the mode and owner of the workspace's
// directory it covers, or of its parent where the workspace has none.
func (l *gitLayer) mkdirAll(rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := path.Join(parts[:i+1]...)
		l.touched[sub] = true
		p := filepath.Join(l.dir, sub)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		mode := uint32(0o755)
		like := sub
		if info, err := l.ws.Lstat(sub); err == nil && info.IsDir() {
			mode = info.Sys().(*syscall.Stat_t).Mode & 0o7777
		} else {
			like = path.Dir(sub)
		}
		o, err := l.ownerOf(like)
		if err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := os.Mkdir(p, 0o700); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Lchown(p, int(o.uid), int(o.gid)); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Chmod(p, mode); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
	}
	return nil
}

// restoreTimes gives every directory the layer made or wrote into, and
// the layer's root, the times of the workspace's directory it covers:
// the topmost layer holding a directory is what the container sees of it.
func (l *gitLayer) restoreTimes() error {
	l.touched["."] = true
	for rel := range l.touched {
		info, err := l.ws.Lstat(rel)
		if err != nil || !info.IsDir() {
			continue
		}
		st := info.Sys().(*syscall.Stat_t)
		times := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(st.Mtim.Nano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(l.dir, rel), times, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
	}
	return nil
}

// strip takes out of a captured run's upper layer what it holds of the
// mask's own files (a replace ref pruned, the alternates file rewritten)
// and the mask's replace refs from a rewritten packed-refs: none of them
// is the command's change, and none must reach the owner's repository.
// The upper layer was the container's to write, so nothing in it is
// followed.
func (g gitMasks) strip(upper string) error {
	if len(g.written) == 0 {
		return nil
	}
	root, err := beneath.Open(upper)
	if err != nil {
		return fmt.Errorf("strip git's masks: %w", err)
	}
	defer root.Close()
	for _, rel := range g.written {
		if err := root.RemoveAll(rel); err != nil {
			return fmt.Errorf("strip git's masks: %w", err)
		}
		// A directory the mask made and the command emptied (pack-refs
		// prunes the loose refs) goes too: the workspace has none.
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if empty, err := emptyPlainDir(root, dir); err != nil || !empty {
				break
			}
			if err := root.Remove(dir); err != nil {
				return fmt.Errorf("strip git's masks: %w", err)
			}
		}
	}
	for repo, masked := range g.refs {
		packed := path.Join(repo, "packed-refs")
		data, err := root.ReadFile(packed, 64<<20)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("strip git's masks: %w", err)
		}
		var kept []byte
		for line := range bytes.Lines(data) {
			_, ref, _ := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
			if name, ok := bytes.CutPrefix(ref, []byte("refs/replace/")); ok && slices.Contains(masked, string(name)) {
				continue
			}
			kept = append(kept, line...)
		}
		if len(kept) != len(data) {
			info, err := root.Lstat(packed)
			if err != nil {
				return fmt.Errorf("strip git's masks: %w", err)
			}
			if err := root.WriteFile(packed, kept, info.Mode().Perm()); err != nil {
				return fmt.Errorf("strip git's masks: %w", err)
			}
		}
	}
	return nil
}
