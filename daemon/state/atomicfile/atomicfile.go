package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces the file at path with data and gives it perm. It writes a
// temporary file in the same directory (a rename is only atomic within one
// file system), flushes it to disk, renames it over path and flushes the
// directory so the rename itself survives a power cut. On any failure the
// temporary file is removed and path is left as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, -1, true)
}

// WriteFileFor is [WriteFile] for a file a group reads: the new file is
// given the group gid before it takes path's place, so that no one else
// of the directory's group could read it meanwhile.
func WriteFileFor(path string, data []byte, perm os.FileMode, gid int) error {
	return replace(path, data, perm, gid, true)
}

// WriteView replaces the file at path with data as WriteFile does, as
// atomically for a reader, but flushes nothing to disk: for a file that
// only shows what is kept elsewhere (the panel's picture, written a few
// times a turn), which a power cut may take back to an older version
// without anything being lost.
func WriteView(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, -1, false)
}

// replace writes data to a temporary file beside path and renames it over
// path; a gid not -1 is the file's group; durable flushes the file and
// then the directory.
func replace(path string, data []byte, perm os.FileMode, gid int, durable bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create temporary file: %w", path, err)
	}
	tmpName := tmp.Name()
	defer func() {
		// Closing twice is harmless; it only matters on the early returns.
		tmp.Close()
		if err != nil {
			os.Remove(tmpName)
		}
	}()

	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return fmt.Errorf("write %s: flush: %w", path, err)
		}
	}
	if gid >= 0 {
		if err := tmp.Chown(-1, gid); err != nil {
			return fmt.Errorf("write %s: give it group %d: %w", path, gid, err)
		}
	}
	// Chmod rather than a mode at creation, so the umask cannot narrow
	// perm; after the group, whose change drops a set-group-ID bit.
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: set mode %v: %w", path, perm, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !durable {
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("flush directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("flush directory %s: %w", dir, err)
	}
	return nil
}
