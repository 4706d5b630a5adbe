package sandbox

import (
	"bytes"
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

	"golang.org/x/sys/unix"
)

// ErrUnsupportedOverlay marks an upper layer written by an overlay mounted
// with features the sandbox turns off (redirect_dir, metacopy): such a
// layer no longer says what changed by itself, so it cannot be scanned.
var ErrUnsupportedOverlay = errors.New("the overlay was mounted with options the sandbox does not support")

// The extended attributes overlayfs keeps on upper-layer entries.
const (
	xattrOpaque   = "trusted.overlay.opaque"
	xattrRedirect = "trusted.overlay.redirect"
	xattrMetacopy = "trusted.overlay.metacopy"
)

// upperScan walks one upper layer against the lower layer it covers.
type upperScan struct {
	upper, lower string
	changes      []Change
}

// scanUpper lists what a captured run changed, sorted by path: every
// entry of the upper layer compared with the lower layer (the workspace)
// it was mounted over. It never follows a symbolic link, in either layer.
//
// An entry is a change only when the workspace would differ: a copied-up
// parent directory is not one unless its permission bits changed, and a
// file copied up but left as it was (touched, opened for writing) is not
// one either. A whiteout that hides nothing is not one. A directory that
// takes the place of something else (overlayfs marks it opaque, or the
// lower layer holds a file there) is Replaced, and whatever is inside it
// is Created. Device files, fifos and sockets are listed with their type,
// for [ChangeSet.Apply] to refuse.
//
// It fails, with an error wrapping [ErrUnsupportedOverlay], on an entry
// carrying a redirect or metacopy attribute.
func scanUpper(upper, lower string) ([]Change, error) {
	if info, err := os.Lstat(upper); err != nil {
		return nil, fmt.Errorf("scan upper layer: %w", err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("scan upper layer %s: not a directory", upper)
	}
	if info, err := os.Stat(lower); err != nil {
		return nil, fmt.Errorf("scan upper layer against %s: %w", lower, err)
	} else if !info.IsDir() {
		return nil, fmt.Errorf("scan upper layer against %s: not a directory", lower)
	}
	scan := upperScan{upper: upper, lower: lower}
	if err := scan.dir("", true); err != nil {
		return nil, err
	}
	slices.SortFunc(scan.changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return scan.changes, nil
}

// dir scans the entries of the upper directory rel. inLower says that the
// lower layer holds a real directory at rel, so its entries are worth
// comparing; below a created or replaced directory everything is new.
func (s *upperScan) dir(rel string, inLower bool) error {
	entries, err := os.ReadDir(filepath.Join(s.upper, rel))
	if err != nil {
		return fmt.Errorf("scan upper layer: %w", err)
	}
	for _, entry := range entries {
		if err := s.entry(path.Join(rel, entry.Name()), inLower); err != nil {
			return err
		}
	}
	return nil
}

// entry scans one upper-layer entry, and what is below it.
func (s *upperScan) entry(rel string, parentInLower bool) error {
	upperPath := filepath.Join(s.upper, rel)
	info, err := os.Lstat(upperPath)
	if err != nil {
		return fmt.Errorf("scan upper layer: %w", err)
	}
	for _, name := range []string{xattrRedirect, xattrMetacopy} {
		if _, present, err := lookupXattr(upperPath, name); err != nil {
			return fmt.Errorf("scan upper layer %q: %w", rel, err)
		} else if present {
			return fmt.Errorf("scan upper layer %q: it carries %s: %w", rel, name, ErrUnsupportedOverlay)
		}
	}

	var lowerInfo fs.FileInfo // nil: the workspace has nothing at rel
	if parentInLower {
		lowerInfo, err = os.Lstat(filepath.Join(s.lower, rel))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			lowerInfo, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("scan upper layer %q against the workspace: %w", rel, err)
		}
	}

	mode := info.Mode()
	switch {
	case isWhiteout(info):
		if lowerInfo != nil {
			s.add(Change{Path: rel, Kind: Deleted})
		}
		return nil
	case mode.IsDir():
		return s.directory(rel, info, lowerInfo)
	case mode.IsRegular() || mode.Type() == fs.ModeSymlink:
		change := Change{Path: rel, Kind: Created, Type: mode.Type()}
		if mode.IsRegular() {
			change.Perm, change.Size = mode.Perm(), info.Size()
			if change.Sparse, err = hasHoles(upperPath, info.Size()); err != nil {
				return fmt.Errorf("scan upper layer %q: %w", rel, err)
			}
		} else if change.Target, err = os.Readlink(upperPath); err != nil {
			return fmt.Errorf("scan upper layer: %w", err)
		}
		if lowerInfo != nil {
			same, err := s.unchanged(change, lowerInfo)
			if err != nil || same {
				return err
			}
			change.Kind = Modified
		}
		s.add(change)
		return nil
	default:
		// A device, fifo or socket: listed so that it is seen and refused.
		change := Change{Path: rel, Kind: Created, Type: mode.Type(), Perm: mode.Perm()}
		if lowerInfo != nil {
			change.Kind = Modified
		}
		s.add(change)
		return nil
	}
}

// directory scans an upper-layer directory and its entries.
func (s *upperScan) directory(rel string, info, lowerInfo fs.FileInfo) error {
	opaque, _, err := lookupXattr(filepath.Join(s.upper, rel), xattrOpaque)
	if err != nil {
		return fmt.Errorf("scan upper layer %q: %w", rel, err)
	}
	change := Change{Path: rel, Type: fs.ModeDir, Perm: info.Mode().Perm()}
	lowerIsDir := lowerInfo != nil && lowerInfo.IsDir()
	switch {
	case lowerInfo == nil:
		change.Kind = Created
	case opaque == "y" || !lowerIsDir:
		change.Kind = Replaced
	case lowerInfo.Mode().Perm() != change.Perm:
		change.Kind = Modified
	}
	if change.Kind != "" {
		s.add(change)
	}
	return s.dir(rel, change.Kind != Created && change.Kind != Replaced)
}

// unchanged reports whether a regular file or link found in the upper
// layer is what the workspace already holds: a copy-up with nothing
// changed that the workspace would keep.
func (s *upperScan) unchanged(change Change, lowerInfo fs.FileInfo) (bool, error) {
	lowerPath := filepath.Join(s.lower, change.Path)
	if lowerInfo.Mode().Type() != change.Type {
		return false, nil
	}
	if change.Type == fs.ModeSymlink {
		target, err := os.Readlink(lowerPath)
		if err != nil {
			return false, fmt.Errorf("scan upper layer %q against the workspace: %w", change.Path, err)
		}
		return target == change.Target, nil
	}
	if lowerInfo.Mode().Perm() != change.Perm || lowerInfo.Size() != change.Size {
		return false, nil
	}
	same, err := sameContent(filepath.Join(s.upper, change.Path), lowerPath)
	if err != nil {
		return false, fmt.Errorf("scan upper layer %q against the workspace: %w", change.Path, err)
	}
	return same, nil
}

func (s *upperScan) add(change Change) {
	s.changes = append(s.changes, change)
}

// isWhiteout reports whether info is an overlayfs whiteout: a character
// device numbered 0/0.
func isWhiteout(info fs.FileInfo) bool {
	if info.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
		return false
	}
	stat, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return stat.Rdev == 0
}

// lookupXattr returns the value of the extended attribute name on path,
// without following a link, and whether it is present at all.
func lookupXattr(path, name string) (value string, present bool, err error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Lgetxattr(path, name, buf)
		switch {
		case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP):
			return "", false, nil
		case errors.Is(err, unix.ERANGE):
			buf = make([]byte, 2*len(buf))
			continue
		case err != nil:
			return "", false, fmt.Errorf("read attribute %s: %w", name, err)
		}
		return string(buf[:n]), true, nil
	}
}

// hasHoles reports whether the regular file at path, of size bytes, has
// a hole: the file system says its first hole starts before its end. A
// small file kept inline in its inode has none, however few blocks it
// takes.
func hasHoles(path string, size int64) (bool, error) {
	if size == 0 {
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil // a file system that cannot tell keeps no holes either
	}
	if err != nil {
		return false, fmt.Errorf("look for holes: %w", err)
	}
	return hole < size, nil
}

// sameContent reports whether two regular files, opened without following
// a link, hold the same bytes.
func sameContent(pathA, pathB string) (same bool, err error) {
	a, err := os.OpenFile(pathA, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer a.Close()
	b, err := os.OpenFile(pathB, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer b.Close()
	bufA, bufB := make([]byte, 32<<10), make([]byte, 32<<10)
	for {
		nA, errA := io.ReadFull(a, bufA)
		nB, errB := io.ReadFull(b, bufB)
		if !bytes.Equal(bufA[:nA], bufB[:nB]) {
			return false, nil
		}
		endA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		endB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		switch {
		case errA != nil && !endA:
			return false, errA
		case errB != nil && !endB:
			return false, errB
		case endA || endB:
			return endA && endB, nil
		}
	}
}
