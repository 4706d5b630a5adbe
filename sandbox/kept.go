package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Keep moves the change set's upper layer to dir, which must not exist
// yet and must lie on the run directory's file system, so that it
// outlives the run while the owner decides; the rest of the run's
// directory goes. The set then reads from, applies from and discards dir.
func (cs *ChangeSet) Keep(dir string) error {
	if cs == nil {
		return errors.New("keep changes: no change set")
	}
	if err := os.Rename(cs.upper, dir); err != nil {
		return fmt.Errorf("keep changes: %w", err)
	}
	old := cs.dir
	cs.upper, cs.dir = dir, dir
	if old != dir {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("keep changes: remove the run's directory: %w", err)
		}
	}
	return nil
}

// OpenKept reads a change set that [ChangeSet.Keep] put in dir, scanned
// afresh against the workspace as it is now: what Apply would do today.
func OpenKept(dir, workspace string) (*ChangeSet, error) {
	changes, err := scanUpper(dir, workspace)
	if err != nil {
		return nil, fmt.Errorf("open kept changes: %w", err)
	}
	return newChangeSet("", dir, workspace, changes), nil
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
