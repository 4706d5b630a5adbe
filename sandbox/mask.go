package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"shelldon/beneath"
	"shelldon/policy"
)

// maxMaskEntries bounds the entries one run's look for credentials goes
// through: a workspace twice the size of a large project (100,000 files)
// is looked through, a bigger one is refused, since every run pays for
// the look.
const maxMaskEntries = 200_000

// fileID names a file on the host whatever path leads to it.
type fileID struct{ dev, ino uint64 }

// vaultID is the identity of the vault directory, or the zero ID when
// there is none to hide.
func vaultID(vault string) (fileID, error) {
	if vault == "" {
		return fileID{}, nil
	}
	var st unix.Stat_t
	err := unix.Stat(vault, &st)
	if errors.Is(err, fs.ErrNotExist) {
		return fileID{}, nil
	}
	if err != nil {
		return fileID{}, fmt.Errorf("vault: %w", err)
	}
	return fileID{dev: st.Dev, ino: st.Ino}, nil
}

// masker builds the layer that hides, from an overlay over one host
// directory, every entry whose name policy calls a credential
// ([policy.DeniedName]) and the vault: a whiteout for each, which the
// overlay takes for a deletion, so that the container finds no such name,
// and neither does a link that leads to one. A directory is hidden whole,
// and nothing in it is looked at. The layer lies above the directory in
// the overlay, and the topmost layer holding a directory is what the
// container sees of it, so every directory the layer holds copies the
// mode, owner and times of the directory it covers.
//
// The look lists every directory without following a link (a link is
// hidden by its own name; what it leads to inside the workspace is hidden
// by its). It goes through a copy of the directory's mount without what
// is mounted inside it, since an overlay shows what such mounts cover,
// not the mounts.
//
// What appears in the directory after the look is not hidden: the
// container cannot make it (the overlay's lower layers are never
// written), and the workspace's owner on the host, who can, is trusted.
type masker struct {
	src     *beneath.Root // the copy of the directory's mount
	layer   string        // the mask layer being built
	vault   fileID
	entries int
	limit   int // of entries, maxMaskEntries but in tests
	// path are the directories from the root to the one being listed,
	// each made in the layer only once something below it is hidden.
	path []maskDir
	// repos are the git directories found, which gitmask.go masks too.
	repos []string
}

type maskDir struct {
	rel  string
	st   unix.Stat_t
	made bool
}

// buildMask makes layer, which must not exist, the mask of src; the
// vault, if not zero, is hidden wherever it lies below src. It refuses,
// with an error wrapping ErrWorkspace, a src of more than limit entries.
func buildMask(layer, src string, vault fileID, limit int) error {
	_, err := buildMaskFindingRepos(layer, src, vault, limit)
	return err
}

// buildMaskFindingRepos is buildMask, returning the git directories it
// found below src, outside what it hides.
func buildMaskFindingRepos(layer, src string, vault fileID, limit int) (repos []string, err error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("look for credentials in %s: %w", src, err)
	}
	// The copy is never attached anywhere: closing it takes it down.
	defer unix.Close(tree)
	root, err := beneath.Open(fmt.Sprintf("/proc/self/fd/%d", tree))
	if err != nil {
		return nil, fmt.Errorf("look for credentials in %s: %w", src, err)
	}
	defer root.Close()
	m := &masker{src: root, layer: layer, vault: vault, limit: limit}
	if err := m.dir(""); err != nil {
		return nil, fmt.Errorf("look for credentials in %s: %w", src, err)
	}
	return m.repos, nil
}

// dir lists the directory rel, hides what must be hidden in it, and goes
// on into the rest of its directories.
func (m *masker) dir(rel string) (err error) {
	f, err := m.src.OpenDir(rel)
	if rel != "" && (errors.Is(err, beneath.ErrLink) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR)) {
		return nil // no longer a directory: the host changed it since its parent was listed
	}
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	d := maskDir{rel: rel}
	if err := unix.Fstat(int(f.Fd()), &d.st); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if rel != "" && m.vault != (fileID{}) && (fileID{dev: d.st.Dev, ino: d.st.Ino}) == m.vault {
		return m.hide(rel)
	}
	m.path = append(m.path, d)
	defer func() {
		if err == nil {
			err = m.leave()
		}
	}()
	if rel == "" {
		// The layer's root covers the directory's root, hiding or not.
		if err := m.make(); err != nil {
			return err
		}
	}
	var subdirs []string
	var git gitDirEntries
	for {
		entries, err := f.ReadDir(1024)
		for _, e := range entries {
			git.see(e)
			if m.entries++; m.entries > m.limit {
				return fmt.Errorf("%w: it holds more than %d files and directories, which the sandbox looks through for credentials before every run; remove what is not needed there (build outputs, virtual environments, caches)", ErrWorkspace, m.limit)
			}
			child := path.Join(rel, e.Name())
			switch {
			case policy.DeniedName(e.Name()):
				if err := m.hide(child); err != nil {
					return err
				}
			case e.IsDir():
				subdirs = append(subdirs, child)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("list %q: %w", rel, err)
		}
	}
	if git.complete() {
		m.repos = append(m.repos, rel)
	}
	// One directory open at a time, however deep the tree.
	f.Close()
	f = nil
	for _, sub := range subdirs {
		if err := m.dir(sub); err != nil {
			return err
		}
	}
	return nil
}

// hide puts a whiteout at rel in the layer, making the directories above
// it first.
func (m *masker) hide(rel string) error {
	if err := m.make(); err != nil {
		return err
	}
	if err := unix.Mknod(filepath.Join(m.layer, rel), unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("hide %q: %w", rel, err)
	}
	return nil
}

// make makes, in the layer, the directories of the path being listed
// that it does not hold yet, each like the one it covers.
func (m *masker) make() error {
	for i := range m.path {
		d := &m.path[i]
		if d.made {
			continue
		}
		dir := filepath.Join(m.layer, d.rel)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		// The owner first: a change of owner drops the setgid bit.
		if err := unix.Lchown(dir, int(d.st.Uid), int(d.st.Gid)); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Chmod(dir, d.st.Mode&0o7777); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		d.made = true
	}
	return nil
}

// leave ends the listing of the last directory of the path. Its times are
// copied only now, once everything below it is made, since making an
// entry changes its directory's.
func (m *masker) leave() error {
	d := m.path[len(m.path)-1]
	m.path = m.path[:len(m.path)-1]
	if !d.made {
		return nil
	}
	dir := filepath.Join(m.layer, d.rel)
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dir, []unix.Timespec{d.st.Atim, d.st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("mask layer: %w", err)
	}
	return nil
}
