package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Root is a directory opened as a root: every path given to its methods
// is relative to it, and resolved from its descriptor without following
// a link. Their errors name that relative path, not the root's own; a
// file they open is named by its path on the host, as os.Open would.
//
// A Root may be used from several goroutines, but Close must not run
// while another method does.
type Root struct {
	fd   int
	path string
}

// Open opens dir as a root. dir itself is followed through links, as
// configuration is; nothing beneath it ever is.
func Open(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{fd: fd, path: dir}, nil
}

// Close closes the root's directory.
func (r *Root) Close() error {
	if r.fd < 0 {
		return &fs.PathError{Op: "close", Path: r.path, Err: fs.ErrClosed}
	}
	err := unix.Close(r.fd)
	r.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: r.path, Err: err}
	}
	return nil
}

// Path is the directory given to Open.
func (r *Root) Path() string { return r.path }

// OpenFile opens rel with flag (os.O_RDONLY and the like) and, when it
// creates the file, the permission bits of perm less the umask. A link
// anywhere in rel, the last name included, is refused.
func (r *Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	return r.open("open", rel, flag, perm)
}

// OpenDir opens the directory rel; "" or "." is the root itself. Read
// its entries with [Root.ReadDir]: the file's own ReadDir describes them
// by path, following links.
func (r *Root) OpenDir(rel string) (*os.File, error) {
	return r.open("open", rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

// ReadFile returns the contents of the regular file rel. It refuses
// anything else, and a file of more than max bytes.
func (r *Root) ReadFile(rel string, max int64) ([]byte, error) {
	// O_NONBLOCK, so that a fifo planted at rel cannot hold the open
	// until a writer comes; it is refused below. O_NOCTTY, so that a
	// terminal cannot become core's.
	f, err := r.open("read", rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readRegular(f, max)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: rel, Err: err}
	}
	return data, nil
}

func readRegular(f *os.File, max int64) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", info.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, err
	}
	if n, _ := f.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("grew past the %d bytes allowed while it was read", max)
	}
	return data, nil
}

// WriteFile replaces rel with a file holding data, with the permission
// bits of perm less the umask. The file is written under a temporary
// name in rel's directory, synced, and renamed over rel, and the
// directory synced: a reader sees the old contents or the new, and a
// link at rel is replaced, never written through. The directory must
// exist (see [Root.MkdirAll]).
func (r *Root) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	dir, name, err := r.locateChange(rel)
	if err == nil {
		err = replaceAt(dir, name, data, perm)
		unix.Close(dir)
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: rel, Err: err}
	}
	return nil
}

func replaceAt(dir int, name string, data []byte, perm fs.FileMode) error {
	temp := fmt.Sprintf(".beneath-%016x", rand.Uint64())
	// O_EXCL: the file is new, never something already at the name.
	fd, err := unix.Openat(dir, temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), temp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = unix.Renameat(dir, temp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, temp, 0)
		return err
	}
	return unix.Fsync(dir)
}

// MkdirAll makes the directory rel and those above it that are missing,
// with the permission bits of perm less the umask. A name on the way
// that is a link, or something else than a directory, is an error.
func (r *Root) MkdirAll(rel string, perm fs.FileMode) error {
	names, err := split(rel)
	if err == nil {
		err = mkdirAll(r.fd, names, perm)
	}
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: rel, Err: err}
	}
	return nil
}

// mkdirAll makes names one below the other from dir, stepping into each
// with openBeneath, so that a link in place of a directory (there before
// the mkdirat, or swapped in after it) is refused, not followed.
func mkdirAll(dir int, names []string, perm fs.FileMode) error {
	dir, err := openBeneath(dir, nil, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer func() { unix.Close(dir) }() // whichever directory is open last
	for _, name := range names {
		if err := unix.Mkdirat(dir, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		next, err := openBeneath(dir, []string{name}, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		unix.Close(dir)
		dir = next
	}
	return nil
}

// Remove removes the file, link or empty directory rel. A link is
// removed itself, never what it points to. Nothing at rel is not an
// error.
func (r *Root) Remove(rel string) error {
	dir, name, err := r.locateChange(rel)
	if err == nil {
		err = unix.Unlinkat(dir, name, 0)
		if errors.Is(err, unix.EISDIR) {
			err = unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
		}
		unix.Close(dir)
	}
	if err = missingOK(err); err != nil {
		return &fs.PathError{Op: "remove", Path: rel, Err: err}
	}
	return nil
}

// RemoveAll removes rel and, when it is a directory, everything in it.
// It never descends through a link: a link in the tree is removed
// itself. Nothing at rel is not an error.
func (r *Root) RemoveAll(rel string) error {
	dir, name, err := r.locateChange(rel)
	if err == nil {
		err = removeAllAt(dir, name)
		unix.Close(dir)
	}
	if err = missingOK(err); err != nil {
		return &fs.PathError{Op: "removeall", Path: rel, Err: err}
	}
	return nil
}

func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if !errors.Is(err, unix.EISDIR) {
		return missingOK(err)
	}
	sub, err := openBeneath(dir, []string{name}, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return missingOK(err)
	}
	names, err := dirNames(sub)
	for _, child := range names {
		if err = removeAllAt(sub, child); err != nil {
			break
		}
	}
	unix.Close(sub)
	if err != nil {
		return err
	}
	return missingOK(unix.Unlinkat(dir, name, unix.AT_REMOVEDIR))
}

// missingOK drops an error saying there was nothing there.
func missingOK(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Rename renames from to to, replacing a file or link at to. Both
// directories are opened without following links, and neither last name
// is followed: a link is renamed or replaced itself.
func (r *Root) Rename(from, to string) error {
	if err := r.rename(from, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

func (r *Root) rename(from, to string) error {
	fromDir, fromName, err := r.locateChange(from)
	if err != nil {
		return err
	}
	defer unix.Close(fromDir)
	toDir, toName, err := r.locateChange(to)
	if err != nil {
		return err
	}
	defer unix.Close(toDir)
	return unix.Renameat(fromDir, fromName, toDir, toName)
}

// Lstat describes rel; a link at the end is described itself.
func (r *Root) Lstat(rel string) (fs.FileInfo, error) {
	dir, name, err := r.locate(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	defer unix.Close(dir)
	info, err := lstatAt(dir, name)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return info, nil
}

// Readlink returns the target of the link rel, which it does not follow.
func (r *Root) Readlink(rel string) (string, error) {
	dir, name, err := r.locate(rel)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: rel, Err: err}
	}
	defer unix.Close(dir)
	buf := make([]byte, unix.PathMax) // a target is at most PATH_MAX-1 bytes
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: rel, Err: err}
	}
	return string(buf[:n]), nil
}

// ReadDir lists the directory rel, sorted by name, each entry described
// as [Root.Lstat] would.
func (r *Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	entries, err := r.readDir(rel)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: rel, Err: err}
	}
	return entries, nil
}

func (r *Root) readDir(rel string) ([]fs.DirEntry, error) {
	dir, err := r.openRel(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	names, err := dirNames(dir)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	entries := make([]fs.DirEntry, 0, len(names))
	for _, name := range names {
		info, err := lstatAt(dir, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, fs.FileInfoToDirEntry(info))
	}
	return entries, nil
}

// open checks rel and opens it as a file named by its host path.
func (r *Root) open(op, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := r.openRel(rel, flag, perm)
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(r.path, rel)), nil
}

// openRel checks rel and opens it beneath the root.
func (r *Root) openRel(rel string, flag int, perm fs.FileMode) (int, error) {
	names, err := split(rel)
	if err != nil {
		return -1, err
	}
	return openBeneath(r.fd, names, flag, perm)
}

// locate checks rel and opens the directory holding its last name, for
// a call on that single name; the name is "." for the root itself.
func (r *Root) locate(rel string) (dir int, name string, err error) {
	names, err := split(rel)
	if err != nil {
		return -1, "", err
	}
	name = "."
	if len(names) > 0 {
		names, name = names[:len(names)-1], names[len(names)-1]
	}
	dir, err = openBeneath(r.fd, names, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	return dir, name, err
}

var errRoot = errors.New("the root itself cannot be written, removed or renamed")

// locateChange is locate for a change, which the root itself refuses.
func (r *Root) locateChange(rel string) (dir int, name string, err error) {
	dir, name, err = r.locate(rel)
	if err == nil && name == "." {
		unix.Close(dir)
		return -1, "", errRoot
	}
	return dir, name, err
}

// lstatAt describes name in dir, a link as itself: O_PATH|O_NOFOLLOW
// opens whatever is there without reading it.
func lstatAt(dir int, name string) (fs.FileInfo, error) {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Stat()
}

// dirNames lists the open directory dir, without "." and "..".
func dirNames(dir int) ([]string, error) {
	var names []string
	buf := make([]byte, 8<<10)
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
