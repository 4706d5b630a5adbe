package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Keep copies the change set's upper layer to dir, which must not exist
// yet, so that it outlives the run, and a restart, while the owner
// decides; the run's file system, which lives in memory, is freed. The
// set then reads from, applies from and discards dir. The copy is no
// bigger than the layer, which the run's disk limit bounded: holes stay
// holes. On failure nothing of dir is left and the set is as it was.
func (cs *ChangeSet) Keep(dir string) (err error) {
	if cs == nil || cs.upper == "" {
		return errors.New("keep changes: no change set")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("keep changes: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := copyLayer(cs.upper, dir); err != nil {
		return fmt.Errorf("keep changes: %w", err)
	}
	if err := cs.Discard(); err != nil {
		return fmt.Errorf("keep changes: %w", err)
	}
	cs.upper, cs.dir = dir, dir
	return nil
}

// copyLayer copies the upper layer src into the directory dst, never
// following a link: every directory with its mode, owner and opaque mark,
// every file with its data and holes, every link, whiteout, fifo and
// socket as it is. A device other than a whiteout, which a container with
// no capabilities cannot make, is refused.
func copyLayer(src, dst string) error {
	from, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the upper layer: %w", err)
	}
	defer unix.Close(from)
	to, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(to)
	return copyDir(from, to, ".")
}

// copyDir copies the entries of the open directory from into to, then
// gives to from's mode, owner and opaque mark. rel names from in errors.
func copyDir(from, to int, rel string) error {
	names, err := dirNames(from)
	if err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	for _, name := range names {
		if err := copyEntry(from, to, name, path.Join(rel, name)); err != nil {
			return err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(from, &st); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if err := unix.Fchown(to, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if err := unix.Fchmod(to, st.Mode&0o7777); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(from, xattrOpaque, buf)
	switch {
	case errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP):
	case err != nil:
		return fmt.Errorf("%q: read %s: %w", rel, xattrOpaque, err)
	default:
		if err := unix.Fsetxattr(to, xattrOpaque, buf[:n], 0); err != nil {
			return fmt.Errorf("%q: set %s: %w", rel, xattrOpaque, err)
		}
	}
	return nil
}

// copyEntry copies the entry name of the directory from into to.
func copyEntry(from, to int, name, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(from, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(to, name, 0o700); err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
		sub, err := openDirAt(from, name)
		if err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
		defer unix.Close(sub)
		subTo, err := openDirAt(to, name)
		if err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
		defer unix.Close(subTo)
		return copyDir(sub, subTo, rel)
	case unix.S_IFREG:
		return copyFileAt(from, to, name, rel, &st)
	case unix.S_IFLNK:
		target, err := readlinkAt(from, name)
		if err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
		if err := unix.Symlinkat(target, to, name); err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
	case unix.S_IFCHR, unix.S_IFIFO, unix.S_IFSOCK:
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev != 0 {
			return fmt.Errorf("%q is a device, which the sandbox does not keep", rel)
		}
		if err := unix.Mknodat(to, name, st.Mode, int(st.Rdev)); err != nil {
			return fmt.Errorf("%q: %w", rel, err)
		}
	default:
		return fmt.Errorf("%q is a device, which the sandbox does not keep", rel)
	}
	if err := unix.Fchownat(to, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	return nil
}

// copyFileAt copies the regular file name, described by st, of the
// directory from into to, with its holes, mode and owner.
func copyFileAt(from, to int, name, rel string, st *unix.Stat_t) (err error) {
	in, err := unix.Openat(from, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	source := os.NewFile(uintptr(in), rel)
	defer source.Close()
	out, err := unix.Openat(to, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	file := os.NewFile(uintptr(out), rel)
	defer func() {
		if cErr := file.Close(); cErr != nil && err == nil {
			err = fmt.Errorf("%q: %w", rel, cErr)
		}
	}()
	// The sparse copy finds the data wherever it is, so it serves a file
	// without holes as well.
	if _, err := copyContent(file, source, Change{Size: st.Size, Sparse: true}); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if err := file.Chown(int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	if err := unix.Fchmod(out, st.Mode&0o7777); err != nil {
		return fmt.Errorf("%q: %w", rel, err)
	}
	return nil
}

// readlinkAt reads the target of the link name in dir.
func readlinkAt(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// OpenKept reads a change set that [ChangeSet.Keep] put in dir, scanned
// afresh against the workspace as it is now: what Apply would do today.
func OpenKept(dir, workspace string) (*ChangeSet, error) {
	changes, err := scanUpper(dir, workspace)
	if err != nil {
		return nil, fmt.Errorf("open kept changes: %w", err)
	}
	return newKeptChangeSet(dir, workspace, changes), nil
}

// Digest hashes what applying the set would do: every change as scanned
// and every byte of every new file's content. The same upper layer over
// the same workspace hashes the same; a change to either that changes
// what Apply writes changes the digest.
func (cs *ChangeSet) Digest() (string, error) {
	upper, err := os.OpenRoot(cs.upper)
	if err != nil {
		return "", fmt.Errorf("digest changes: %w", err)
	}
	defer upper.Close()
	h := sha256.New()
	field := func(name, value string) { fmt.Fprintf(h, "%s %d\n%s\n", name, len(value), value) }
	for _, c := range cs.Changes {
		field("path", c.Path)
		field("kind", string(c.Kind))
		field("type", strconv.FormatUint(uint64(c.Type), 8))
		field("perm", strconv.FormatUint(uint64(c.Perm), 8))
		field("size", strconv.FormatInt(c.Size, 10))
		field("target", c.Target)
		if c.Kind == Deleted || c.Type != 0 {
			continue
		}
		f, err := upper.OpenFile(c.Path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return "", fmt.Errorf("digest changes: %w", err)
		}
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("digest changes: %q: %w", c.Path, err)
		}
		if n != c.Size {
			return "", fmt.Errorf("digest changes: %q holds %d bytes, not the %d scanned", c.Path, n, c.Size)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadNew returns the new content of the regular file rel as the change
// set holds it, at most max bytes, never following a link.
func (cs *ChangeSet) ReadNew(rel string, max int64) ([]byte, error) {
	upper, err := os.OpenRoot(cs.upper)
	if err != nil {
		return nil, fmt.Errorf("read the new %q: %w", rel, err)
	}
	defer upper.Close()
	f, err := upper.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("read the new %q: %w", rel, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read the new %q: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("read the new %q: it is over %d bytes", rel, max)
	}
	return data, nil
}
