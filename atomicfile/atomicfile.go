package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// WriteFile replaces the file at path with data and gives it perm. It writes a
// temporary file in the same directory (a rename is only atomic within one
// file system), flushes it to disk, renames it over path and flushes the
// directory so the rename itself survives a power cut. On any failure the
// temporary file is removed and path is left as it was.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, true)
}

// WriteView replaces the file at path with data as WriteFile does, as
// atomically for a reader, but flushes nothing to disk: for a file that
// only shows what is kept elsewhere (the panel's picture, written a few
// times a turn), which a power cut may take back to an older version
// without anything being lost.
func WriteView(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, false)
}

// File is one file of a batch for [WriteFiles]: its path and its new
// content.
type File struct {
	Path string
	Data []byte
}

// WriteFiles replaces each of files as WriteFile does, and gives each
// perm, but flushes them to disk together, so that a batch costs a few
// flushes whatever its size, where one flush a file would keep an SD card
// busy for seconds: every temporary file is written, one flush of their
// file system (syncfs) takes all of them to the disk, each is renamed
// over its path, and each directory that holds one is flushed once.
//
// Each file is replaced atomically; the batch is not. A failure before
// the renames leaves every path as it was; one during them leaves the
// files renamed before it replaced, and names the file it failed on. The
// temporary files left are removed either way.
func WriteFiles(files []File, perm os.FileMode) (err error) {
	// temps are the temporary files not renamed yet, by file.
	temps := make([]string, len(files))
	defer func() {
		for _, tmp := range temps {
			if err != nil && tmp != "" {
				os.Remove(tmp)
			}
		}
	}()
	var dirs []string
	for i, f := range files {
		if temps[i], err = writeTemp(f.Path, f.Data, perm, false); err != nil {
			return err
		}
		if dir := filepath.Dir(f.Path); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if err := syncFileSystems(dirs); err != nil {
		return err
	}
	for i, f := range files {
		if err := os.Rename(temps[i], f.Path); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		temps[i] = ""
	}
	for _, dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// syncFileSystems flushes the file system of each of dirs, once a file
// system.
func syncFileSystems(dirs []string) error {
	var flushed []uint64
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("flush the file system of %s: %w", dir, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(int(d.Fd()), &st)
		if err == nil && !slices.Contains(flushed, st.Dev) {
			err = unix.Syncfs(int(d.Fd()))
			flushed = append(flushed, st.Dev)
		}
		d.Close()
		if err != nil {
			return fmt.Errorf("flush the file system of %s: %w", dir, err)
		}
	}
	return nil
}

// replace writes data to a temporary file beside path and renames it over
// path; durable flushes the file and then the directory.
func replace(path string, data []byte, perm os.FileMode, durable bool) error {
	tmp, err := writeTemp(path, data, perm, durable)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !durable {
		return nil
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data, with perm, to a new temporary file beside path,
// flushed to disk when durable, and returns its name; on a failure it
// leaves none.
func writeTemp(path string, data []byte, perm os.FileMode, durable bool) (name string, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("write %s: create temporary file: %w", path, err)
	}
	defer func() {
		// Closing twice is harmless; it only matters on the early returns.
		tmp.Close()
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			return "", fmt.Errorf("write %s: flush: %w", path, err)
		}
	}
	// Chmod rather than a mode at creation, so the umask cannot narrow perm.
	if err := tmp.Chmod(perm); err != nil {
		return "", fmt.Errorf("write %s: set mode %v: %w", path, perm, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write %s: close: %w", path, err)
	}
	return tmp.Name(), nil
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
