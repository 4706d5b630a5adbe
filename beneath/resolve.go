package beneath

import (
	"errors"
	"io/fs"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	// ErrLink is wrapped by the error for a path with a symbolic link
	// where a directory on the way, or the file itself, should be.
	ErrLink = errors.New("a symbolic link is in the way")
	// ErrOutside is wrapped by the error for a path that is absolute,
	// climbs with "..", or would otherwise leave the root.
	ErrOutside = errors.New("the path leaves the root")
)

var errNUL = errors.New("the path holds a NUL byte")

// split checks rel lexically and returns its names, none for the root.
// Empty and "." names are dropped, so "a//b/." is "a/b".
func split(rel string) ([]string, error) {
	if strings.IndexByte(rel, 0) >= 0 {
		return nil, errNUL
	}
	if strings.HasPrefix(rel, "/") {
		return nil, ErrOutside
	}
	var names []string
	for name := range strings.SplitSeq(rel, "/") {
		switch name {
		case "", ".":
		case "..":
			return nil, ErrOutside
		default:
			names = append(names, name)
		}
	}
	return names, nil
}

// walk reports whether paths are resolved by walking them a name at a
// time, because openat2 is missing (ENOSYS, before Linux 5.6) or a
// seccomp filter forbids it (EPERM, as some container profiles do). It
// is decided at the first use; the tests replace it to run both ways.
var walk = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err == nil {
		unix.Close(fd)
	}
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
})

// resolve is what openat2 refuses: leaving the directory it starts
// from, and following any link, magic (/proc/self/fd/N) or not.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens names below the directory dir, following no link,
// and returns the descriptor. A link on the way, or at the end, is
// reported as ErrLink; leaving dir as ErrOutside.
func openBeneath(dir int, names []string, flag int, perm fs.FileMode) (int, error) {
	mode := uint32(perm.Perm())
	if flag&unix.O_CREAT == 0 && flag&unix.O_TMPFILE != unix.O_TMPFILE {
		mode = 0 // openat2, unlike openat, refuses a mode it would not use
	}
	open := openat2Beneath
	if walk() {
		open = walkOpen
	}
	fd, err := open(dir, names, flag, mode)
	switch {
	case errors.Is(err, unix.ELOOP):
		err = ErrLink
	case errors.Is(err, unix.EXDEV):
		err = ErrOutside
	}
	return fd, err
}

// openat2Beneath is openBeneath in one call, the kernel refusing what
// resolve says.
func openat2Beneath(dir int, names []string, flag int, mode uint32) (int, error) {
	p := "."
	if len(names) > 0 {
		p = strings.Join(names, "/")
	}
	// O_NOFOLLOW is dropped: RESOLVE_NO_SYMLINKS refuses a link at the
	// end with ELOOP, where O_NOFOLLOW with O_DIRECTORY would say ENOTDIR.
	flags := flag&^unix.O_NOFOLLOW | unix.O_CLOEXEC
	if flags&unix.O_PATH == 0 {
		// As unix.Openat does, or 32-bit arm opens no file over 2 GiB;
		// openat2 refuses it with O_PATH.
		flags |= unix.O_LARGEFILE
	}
	return unix.Openat2(dir, p, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolve})
}

// walkOpen is openBeneath without openat2. Each directory on the way is
// opened with O_PATH|O_NOFOLLOW, which opens a link itself rather than
// failing, and checked on that descriptor: a second look by name could
// see something else than what was opened. The last name is opened with
// O_NOFOLLOW, so a link there fails with ELOOP; when flag asks for a
// directory, it is walked and checked like the others, and reopened as
// "." with flag. The names are split's, so none climbs with "..".
func walkOpen(dir int, names []string, flag int, mode uint32) (int, error) {
	last := "."
	if flag&unix.O_DIRECTORY == 0 && len(names) > 0 {
		names, last = names[:len(names)-1], names[len(names)-1]
	}
	fd, err := unix.Openat(dir, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer func() { unix.Close(fd) }() // whichever directory is open last
	for _, name := range names {
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		unix.Close(fd)
		fd = next
		var stat unix.Stat_t
		if err := unix.Fstat(fd, &stat); err != nil {
			return -1, err
		}
		switch stat.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			return -1, ErrLink
		default:
			return -1, unix.ENOTDIR
		}
	}
	return unix.Openat(fd, last, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
}
