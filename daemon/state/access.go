package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"slices"
	"strconv"

	"shelldon/daemon/statedir"
)

// ReadersOf are the readers of a state directory whose workers run as
// workerUser (worker.user): its primary group is theirs. An empty name, or
// one this host does not know (no systemd user was made for the workers),
// means none: workers then run as core's own user.
func ReadersOf(workerUser string) (statedir.Readers, error) {
	if workerUser == "" {
		return statedir.NoReaders, nil
	}
	u, err := user.Lookup(workerUser)
	if err != nil {
		return statedir.NoReaders, fmt.Errorf("the workers' user %q: %w", workerUser, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return statedir.NoReaders, fmt.Errorf("the workers' user %q has group %q: %w", workerUser, u.Gid, err)
	}
	return statedir.Readers{WorkerGID: gid}, nil
}

// grant gives every entry of wants that exists its mode and group. A
// link, or a file where a directory should be, is refused, never
// followed.
func grant(wants []statedir.Want) error {
	for _, w := range wants {
		fi, err := os.Lstat(w.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("access of %s: %w", w.Path, err)
		}
		fault := w.Fault(fi)
		if fault == "" {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 || fi.IsDir() != w.Dir {
			return fmt.Errorf("access of %s: %s; move it aside", w.Path, fault)
		}
		// The group first: a change of group drops the set-group-ID bit.
		if w.GID >= 0 {
			if err := os.Lchown(w.Path, -1, w.GID); err != nil {
				return fmt.Errorf("give %s to group %d: %w", w.Path, w.GID, err)
			}
		}
		if err := os.Chmod(w.Path, w.Mode); err != nil {
			return fmt.Errorf("set the mode of %s to %s: %w", w.Path, w.Chmod(), err)
		}
	}
	return nil
}

// grantWorkerFiles gives the files a worker reads their access once core
// has rewritten them, as it writes every file, core's alone: the group
// first, then the mode, so that no one else reads them meanwhile.
func (s *Store) grantWorkerFiles() error {
	var wants []statedir.Want
	for _, w := range s.layout.Access(s.readers) {
		if slices.Contains(s.layout.WorkerFiles(), w.Path) {
			wants = append(wants, w)
		}
	}
	return grant(wants)
}
