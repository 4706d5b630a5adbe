package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Names inside a run's directory.
const (
	upperName  = "upper"
	workName   = "work"
	mergedName = "merged"
)

// workspaceView is how one run's container sees the workspace: the
// workspace itself (read-only), or an overlay over it.
type workspaceView struct {
	ws      string // the real workspace directory
	owner   owner
	upper   string // overlay only
	merged  string // overlay only; what the container gets
	mounted bool
}

// source is the host directory bound to /workspace.
func (v workspaceView) source() string {
	if v.merged != "" {
		return v.merged
	}
	return v.ws
}

// mountOverlay mounts an overlay over ws in runDir. The upper layer
// belongs to the workspace's owner, so the container's root, mapped to
// that owner, can write; its mode copies the workspace's.
//
// Directory renames, metadata-only copies and the inode index are off so
// that the upper layer stays a plain record of files: every changed file
// is there whole, every deletion a whiteout, every replaced directory
// opaque.
func mountOverlay(runDir, ws string, o owner) (workspaceView, error) {
	v := workspaceView{ws: ws, owner: o,
		upper:  filepath.Join(runDir, upperName),
		merged: filepath.Join(runDir, mergedName),
	}
	work := filepath.Join(runDir, workName)
	fi, err := os.Stat(ws)
	if err != nil {
		return v, err
	}
	for _, dir := range []string{v.upper, work, v.merged} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return v, fmt.Errorf("overlay: %w", err)
		}
	}
	if err := os.Chmod(v.upper, fi.Mode().Perm()); err != nil {
		return v, fmt.Errorf("overlay: %w", err)
	}
	if err := os.Lchown(v.upper, int(o.uid), int(o.gid)); err != nil {
		return v, fmt.Errorf("overlay: %w", err)
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off,xino=off", ws, v.upper, work)
	if err := unix.Mount("overlay", v.merged, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return v, fmt.Errorf("mount overlay of %s: %w", ws, err)
	}
	v.mounted = true
	return v, nil
}

// unmount takes the overlay down; it is a no-op for a read-only view
// and for an overlay already unmounted.
func (v *workspaceView) unmount() error {
	if !v.mounted {
		return nil
	}
	err := unix.Unmount(v.merged, 0)
	if errors.Is(err, unix.EBUSY) {
		// Something outside the container still looks at it; the
		// container is gone, so let the kernel finish when it can.
		err = unix.Unmount(v.merged, unix.MNT_DETACH)
	}
	if err != nil {
		return fmt.Errorf("unmount overlay %s: %w", v.merged, err)
	}
	v.mounted = false
	return nil
}

// isMountPoint reports whether path is mounted on (it lies on another
// device than its parent). A path that does not exist is not.
func isMountPoint(path string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(path), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// checkMountablePath refuses a path that overlay options or nspawn's
// --bind cannot carry as written.
func checkMountablePath(what, path string) error {
	if strings.ContainsAny(path, ",:\\\n") {
		return fmt.Errorf("%w: %s %q holds a comma, colon or backslash, which mount options cannot carry; rename or move it", ErrWorkspace, what, path)
	}
	return nil
}

// quietPropagationDir puts a tmpfs on nspawn's propagation directory
// where /run is not one (a build machine without systemd). On such a host
// nspawn can set the directory up but not remove it, and says so on the
// run's output every time; on a systemd host /run is already a tmpfs and
// nothing is done.
func quietPropagationDir() error {
	const dir = "/run/systemd/nspawn"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return err
	}
	if fs.Type == unix.TMPFS_MAGIC {
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
	}
	return nil
}
