package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"shelldon/beneath"
	"shelldon/policy"
)

// ChangeSet is what a captured run changed, not yet applied: the list to
// show the owner, and the upper layer that holds the new contents.
type ChangeSet struct {
	// Changes are sorted by path, as scanned.
	Changes   []Change
	upper     string // the upper layer, read by Apply
	workspace string // the lower layer the changes were scanned against
	// layer is the run's file system, which the upper layer lies in,
	// detached from every path: closing it frees it. Nil for a kept set.
	layer *os.File
	dir   string // a kept set's directory, which Discard removes
}

// newKeptChangeSet wraps the changes scanned from the upper layer kept in
// dir, which Discard removes.
func newKeptChangeSet(dir, workspace string, changes []Change) *ChangeSet {
	return &ChangeSet{Changes: changes, upper: dir, workspace: workspace, dir: dir}
}

// newLayerChangeSet wraps the changes scanned from the upper layer of a
// run whose file system is layer.
func newLayerChangeSet(layer *os.File, workspace string, changes []Change) *ChangeSet {
	upper := fmt.Sprintf("/proc/self/fd/%d/%s", layer.Fd(), upperName)
	return &ChangeSet{Changes: changes, upper: upper, workspace: workspace, layer: layer}
}

// ApplyReport says what [ChangeSet.Apply] did. A change that is in
// neither list was not reached, because Apply stopped at a failure.
type ApplyReport struct {
	Applied []Change
	Refused []Refusal
}

// Refusal is a change that Apply would not make, and why, in words for
// the owner and the model.
type Refusal struct {
	Change Change
	Reason string
}

// refusal is the error inside Apply that turns a change into a
// [Refusal] rather than a failure.
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

func refuse(format string, args ...any) error {
	return &refusal{reason: fmt.Sprintf(format, args...)}
}

// Apply makes the changes in the workspace jail.Root: deletions and
// replacements first, then the rest, each in path order so that a
// directory comes before what is inside it.
//
// Each change is checked before anything is done for it. It is refused
// when its path is not a clean relative path, has a credential-shaped
// component, or lies in the vault; when the directory holding it, as
// resolved in the workspace, leaves the workspace or goes through a
// symbolic link; when it would remove a directory holding the vault or a
// credential-shaped file; and when it is a device, fifo or socket. The
// last component of a path is never followed: a change to a path where
// the workspace has a link replaces or removes the link itself, so a link
// pointing out of the workspace can be deleted or overwritten but never
// written through. A symbolic link whose target is absolute or climbs out
// of the workspace is refused: the host never follows a link it applies,
// but a tool that later resolves paths in the workspace might.
//
// Files are written to a temporary name in their directory, synced, given
// their permission bits (never setuid, setgid or sticky) and renamed into
// place. Running as root, everything created is given to the owner of the
// directory it is created in. Applying the same set twice leaves the
// workspace as applying it once.
//
// A refusal is not an error. Apply returns an error, naming the path,
// when a change it tried to make failed; it stops there, and the report
// still lists what was applied and refused before. It fails before
// changing anything when jail.Root is not the workspace the changes were
// scanned against.
func (cs *ChangeSet) Apply(jail beneath.Jail) (report ApplyReport, err error) {
	if cs == nil {
		return report, errors.New("apply changes: no change set")
	}
	if err := sameDir(jail.Root, cs.workspace); err != nil {
		return report, fmt.Errorf("apply changes: %w", err)
	}
	a, err := openApplier(jail, cs.upper)
	if err != nil {
		return report, err
	}
	defer a.close()
	for _, change := range applyOrder(cs.Changes) {
		err := a.apply(change)
		var refused *refusal
		switch {
		case errors.As(err, &refused):
			report.Refused = append(report.Refused, Refusal{Change: change, Reason: refused.reason})
		case err != nil:
			return report, fmt.Errorf("apply %s %q: %w", change.Kind, change.Path, err)
		default:
			report.Applied = append(report.Applied, change)
		}
	}
	return report, nil
}

// Discard frees the run's file system, or removes the kept directory.
// Discarding what is already gone is not an error; the set is empty
// after.
func (cs *ChangeSet) Discard() error {
	if cs == nil {
		return nil
	}
	cs.upper = ""
	if cs.layer != nil {
		err := cs.layer.Close()
		cs.layer = nil
		if err != nil {
			return fmt.Errorf("discard changes: %w", err)
		}
	}
	if cs.dir != "" {
		dir := cs.dir
		cs.dir = ""
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("discard changes: %w", err)
		}
	}
	return nil
}

// sameDir fails unless root and scanned name the same directory.
func sameDir(root, scanned string) error {
	rootInfo, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	scannedInfo, err := os.Stat(scanned)
	if err != nil {
		return fmt.Errorf("scanned workspace: %w", err)
	}
	if !os.SameFile(rootInfo, scannedInfo) {
		return fmt.Errorf("workspace %s is not %s, which the changes were scanned against", root, scanned)
	}
	return nil
}

// applyOrder returns changes with deletions and replacements first, then
// the others, each group sorted by path: a path sorts before every path
// below it.
func applyOrder(changes []Change) []Change {
	ordered := slices.Clone(changes)
	rank := func(c Change) int {
		if c.Kind == Deleted || c.Kind == Replaced {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(ordered, func(a, b Change) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	return ordered
}

// applier makes changes in one workspace, through directory descriptors
// opened without following links.
type applier struct {
	jail   beneath.Jail
	vault  string        // the vault's real path, or "" when there is none
	root   *beneath.Root // the workspace root directory
	upper  *os.Root      // the upper layer
	asRoot bool          // whether to give created entries to their directory's owner
}

func openApplier(jail beneath.Jail, upper string) (_ *applier, err error) {
	a := &applier{jail: jail, asRoot: os.Geteuid() == 0}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	if jail.Vault != "" {
		a.vault, err = filepath.EvalSymlinks(jail.Vault)
		if errors.Is(err, fs.ErrNotExist) {
			a.vault, err = "", nil // nothing there to protect from removal; Resolve still guards the name
		}
		if err != nil {
			return nil, fmt.Errorf("apply changes: vault: %w", err)
		}
	}
	if a.root, err = beneath.Open(jail.Root); err != nil {
		return nil, fmt.Errorf("apply changes: open workspace: %w", err)
	}
	if a.upper, err = os.OpenRoot(upper); err != nil {
		return nil, fmt.Errorf("apply changes: open upper layer: %w", err)
	}
	return a, nil
}

func (a *applier) close() {
	if a.root != nil {
		a.root.Close()
	}
	if a.upper != nil {
		a.upper.Close()
	}
}

// apply checks one change and makes it.
func (a *applier) apply(c Change) error {
	if err := a.check(c); err != nil {
		return err
	}
	dir, err := a.openParent(c.Path)
	if err != nil {
		return err
	}
	defer dir.Close()
	parent := int(dir.Fd())
	name := path.Base(c.Path)
	switch {
	case c.Kind == Deleted:
		return removeAllAt(parent, name)
	case c.Type == fs.ModeDir:
		return a.putDir(parent, name, c.Perm, c.Kind == Replaced)
	case c.Type == fs.ModeSymlink:
		return a.putLink(parent, name, c.Target)
	default:
		return a.putFile(parent, name, c)
	}
}

// check refuses a change that Apply must not make; other errors say the
// workspace could not be inspected.
func (a *applier) check(c Change) error {
	if c.Path == "" || c.Path == "." || strings.IndexByte(c.Path, 0) >= 0 || !filepath.IsLocal(c.Path) || path.Clean(c.Path) != c.Path {
		return refuse("%q is not a clean path relative to the workspace", c.Path)
	}
	switch c.Kind {
	case Deleted:
	case Replaced:
		if c.Type != fs.ModeDir {
			return refuse("a replacement must be a directory, and %q is a %s", c.Path, typeName(c.Type))
		}
	case Created, Modified:
		if c.Type != 0 && c.Type != fs.ModeDir && c.Type != fs.ModeSymlink {
			return refuse("the sandbox does not carry special files, and %q is a %s", c.Path, typeName(c.Type))
		}
		if c.Type == fs.ModeSymlink && policy.LinkEscapes(c.Path, c.Target) {
			return refuse("%q is a symbolic link to %q, out of the workspace, and the sandbox does not apply such links", c.Path, c.Target)
		}
	default:
		return refuse("unknown kind of change %q", c.Kind)
	}
	if reason, denied := policy.Denied(c.Path); denied {
		return refuse("%q: %s", c.Path, reason)
	}
	parent := path.Dir(c.Path)
	if parent == "." {
		parent = ""
	}
	realParent, err := a.jail.Resolve(parent)
	if err != nil {
		return jailRefusal(err)
	}
	target := filepath.Join(realParent, path.Base(c.Path))
	info, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("inspect the workspace: %w", err)
	case info.Mode().Type() == fs.ModeSymlink:
		return nil // the link itself is what changes
	}
	if _, err := a.jail.Resolve(c.Path); err != nil {
		return jailRefusal(err)
	}
	if info.IsDir() && (c.Kind == Deleted || c.Kind == Replaced || c.Type != fs.ModeDir) {
		return a.checkRemovable(c.Path, target)
	}
	return nil
}

// jailRefusal turns the jail's refusals into a refusal of the change and
// leaves its other errors as failures.
func jailRefusal(err error) error {
	if errors.Is(err, beneath.ErrOutsideWorkspace) || errors.Is(err, policy.ErrDenied) {
		return refuse("%s", err)
	}
	return fmt.Errorf("inspect the workspace: %w", err)
}

// checkRemovable refuses to remove the workspace directory dir (rel in
// the workspace) when the vault or a credential-shaped file lies inside:
// the command may not have seen them, and they are not its to delete.
func (a *applier) checkRemovable(rel, dir string) error {
	if a.vault != "" {
		if below, err := filepath.Rel(dir, a.vault); err == nil && filepath.IsLocal(below) {
			return refuse("%q holds the vault, which the sandbox may not remove", rel)
		}
	}
	return filepath.WalkDir(dir, func(p string, entry fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("inspect the workspace: %w", err)
		}
		if policy.DeniedName(entry.Name()) {
			inside, _ := filepath.Rel(dir, p)
			return refuse("%q holds %q, which is named like a credential and may not be removed", rel, filepath.ToSlash(inside))
		}
		return nil
	})
}

// openParent opens the directory holding rel in the workspace, refusing
// to pass through a symbolic link.
func (a *applier) openParent(rel string) (*os.File, error) {
	dir, err := a.root.OpenDir(path.Dir(rel))
	if errors.Is(err, beneath.ErrLink) {
		return nil, refuse("%q goes through %q, a symbolic link in the workspace, and the sandbox does not write through links", rel, a.firstLink(path.Dir(rel)))
	}
	return dir, err
}

// firstLink names the first directory on the way to dir that is a
// symbolic link, for a refusal to say. It looks again, so it names dir
// when the link is gone by then.
func (a *applier) firstLink(dir string) string {
	walked := ""
	for name := range strings.SplitSeq(dir, "/") {
		walked = path.Join(walked, name)
		if info, err := a.root.Lstat(walked); err == nil && info.Mode().Type() == fs.ModeSymlink {
			return walked
		}
	}
	return dir
}

// openDirAt opens the directory name in dir, failing if it is a link.
func openDirAt(dir int, name string) (int, error) {
	return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// putDir makes name in parent a directory with permission bits perm:
// whatever else is there is removed, and with clear, so is everything in
// the directory.
func (a *applier) putDir(parent int, name string, perm fs.FileMode, clear bool) error {
	var stat unix.Stat_t
	err := unix.Fstatat(parent, name, &stat, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil && stat.Mode&unix.S_IFMT == unix.S_IFDIR:
		// Already a directory: keep it, and its owner.
	case err == nil:
		if err := unix.Unlinkat(parent, name, 0); err != nil {
			return fmt.Errorf("remove what was at %s: %w", name, err)
		}
		fallthrough
	case errors.Is(err, unix.ENOENT):
		if err := unix.Mkdirat(parent, name, 0o700); err != nil {
			return fmt.Errorf("make directory %s: %w", name, err)
		}
		if err := a.giveToOwner(parent, name); err != nil {
			return err
		}
	default:
		return fmt.Errorf("inspect %s: %w", name, err)
	}
	dir, err := openDirAt(parent, name)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", name, err)
	}
	defer unix.Close(dir)
	if clear {
		if err := clearDir(dir); err != nil {
			return fmt.Errorf("empty directory %s: %w", name, err)
		}
	}
	if err := unix.Fchmod(dir, uint32(perm.Perm())); err != nil {
		return fmt.Errorf("set the mode of %s: %w", name, err)
	}
	return nil
}

// putLink makes name in parent a symbolic link to target, replacing what
// is there with a rename so that the name is never missing.
func (a *applier) putLink(parent int, name, target string) (err error) {
	temp := tempName()
	if err := unix.Symlinkat(target, parent, temp); err != nil {
		return fmt.Errorf("make link %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			unix.Unlinkat(parent, temp, 0)
		}
	}()
	if err := a.giveToOwner(parent, temp); err != nil {
		return err
	}
	return replaceAt(parent, temp, name)
}

// putFile writes the upper layer's copy of c into name in parent: a
// temporary file, synced and given its mode, then renamed into place.
func (a *applier) putFile(parent int, name string, c Change) (err error) {
	source, err := a.upper.OpenFile(c.Path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("read the new contents: %w", err)
	}
	defer source.Close()
	if info, err := source.Stat(); err != nil {
		return fmt.Errorf("read the new contents: %w", err)
	} else if !info.Mode().IsRegular() {
		return fmt.Errorf("the upper layer holds a %s, not a regular file", typeName(info.Mode().Type()))
	}

	temp := tempName()
	fd, err := unix.Openat(parent, temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create a temporary file for %s: %w", name, err)
	}
	file := os.NewFile(uintptr(fd), temp)
	defer func() {
		if file != nil {
			file.Close()
		}
		if err != nil {
			unix.Unlinkat(parent, temp, 0)
		}
	}()
	written, err := copyContent(file, source, c)
	if err != nil {
		return fmt.Errorf("copy the new contents: %w", err)
	}
	if written != c.Size {
		return fmt.Errorf("the upper layer holds %d bytes, not the %d scanned: it changed after the scan", written, c.Size)
	}
	if err := file.Chmod(c.Perm.Perm()); err != nil {
		return fmt.Errorf("set the mode of %s: %w", name, err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	err = file.Close()
	file = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := a.giveToOwner(parent, temp); err != nil {
		return err
	}
	return replaceAt(parent, temp, name)
}

// copyContent copies the new contents of c from source to file: a
// sparse file only its data, with its holes left as holes, so that a
// file the owner let through takes on the card what it took in the
// upper layer.
func copyContent(file, source *os.File, c Change) (int64, error) {
	if !c.Sparse {
		return io.Copy(file, source)
	}
	fd := int(source.Fd())
	var copied, offset int64
	for offset < c.Size {
		data, err := unix.Seek(fd, offset, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return copied, fmt.Errorf("find data: %w", err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return copied, fmt.Errorf("find a hole: %w", err)
		}
		n, err := io.Copy(io.NewOffsetWriter(file, data), io.NewSectionReader(source, data, hole-data))
		copied += n
		if err != nil {
			return copied, err
		}
		offset = hole
	}
	if err := file.Truncate(c.Size); err != nil {
		return copied, fmt.Errorf("size the file: %w", err)
	}
	return c.Size, nil
}

// replaceAt renames temp over name in dir, first removing a directory in
// the way (a rename replaces a file or link, never a directory), then
// syncs dir so the rename survives a power cut.
func replaceAt(dir int, temp, name string) error {
	var stat unix.Stat_t
	if err := unix.Fstatat(dir, name, &stat, unix.AT_SYMLINK_NOFOLLOW); err == nil && stat.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := removeAllAt(dir, name); err != nil {
			return err
		}
	}
	if err := unix.Renameat(dir, temp, dir, name); err != nil {
		return fmt.Errorf("move %s into place: %w", name, err)
	}
	if err := unix.Fsync(dir); err != nil {
		return fmt.Errorf("sync the directory of %s: %w", name, err)
	}
	return nil
}

// giveToOwner, when running as root, gives name in dir (never following
// a link) to the owner of dir, so that what Apply creates belongs to
// whoever owns the workspace and not to root.
func (a *applier) giveToOwner(dir int, name string) error {
	if !a.asRoot {
		return nil
	}
	var owner unix.Stat_t
	if err := unix.Fstat(dir, &owner); err != nil {
		return fmt.Errorf("find the owner of the directory of %s: %w", name, err)
	}
	if err := unix.Fchownat(dir, name, int(owner.Uid), int(owner.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("give %s to its directory's owner: %w", name, err)
	}
	return nil
}

// removeAllAt removes name in dir and, if it is a directory, everything
// in it, never following a link. A name already gone is not an error.
func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	sub, err := openDirAt(dir, name)
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	err = clearDir(sub)
	unix.Close(sub)
	if err != nil {
		return fmt.Errorf("empty %s: %w", name, err)
	}
	if err := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// clearDir removes everything in the open directory dir.
func clearDir(dir int) error {
	names, err := dirNames(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := removeAllAt(dir, name); err != nil {
			return err
		}
	}
	return nil
}

// dirNames lists the names in the open directory dir.
func dirNames(dir int) ([]string, error) {
	var names []string
	buf := make([]byte, 8<<10)
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil {
			return nil, fmt.Errorf("list directory: %w", err)
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// tempName is a fresh name for a file on its way into place.
func tempName() string {
	return fmt.Sprintf(".shelldon-apply-%016x", rand.Uint64())
}

// typeName names a file type for a refusal.
func typeName(t fs.FileMode) string {
	switch {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "fifo"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "block device"
	}
	return "file of type " + t.String()
}
