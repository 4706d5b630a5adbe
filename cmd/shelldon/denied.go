package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// explainDenied adds the fix to the error of a file this user may not
// use: who owns it and what to do. The state directory is core's, and
// core runs as root on a board, so the usual cause is running a command
// as oneself on it. Root gets the error as it is: what refuses root (a
// read-only mount, an attribute) the error names itself.
func explainDenied(err error) error {
	var pathErr *fs.PathError
	if err == nil || os.Geteuid() == 0 || !errors.Is(err, fs.ErrPermission) || !errors.As(err, &pathErr) {
		return err
	}
	return fmt.Errorf("%w\nfix: %s, and this is %s: run the command as root (sudo shelldon …) or as that user, or give it a --state-dir of your own",
		err, ownerOf(pathErr.Path), userName(os.Geteuid()))
}

// ownerOf says who owns path, or the nearest directory above it this user
// may look at.
func ownerOf(path string) string {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if info, err := os.Stat(p); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				return fmt.Sprintf("%s belongs to %s", p, userName(int(st.Uid)))
			}
		}
		if p == filepath.Dir(p) {
			return path + " is not this user's"
		}
	}
}

// userName is "name (uid N)", or "uid N" for a uid without a name.
func userName(uid int) string {
	id := strconv.Itoa(uid)
	if u, err := user.LookupId(id); err == nil {
		return fmt.Sprintf("%s (uid %s)", u.Username, id)
	}
	return "uid " + id
}
