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

// Names inside a run's directory, all on the run's own file system.
const (
	upperName  = "upper"
	workName   = "work"
	mergedName = "merged"
	maskName   = "mask"
	tmpName    = "tmp"
	varTmpName = "var-tmp"
)

// runFS is a run's own file system: a tmpfs of Limits.Disk bytes mounted
// on the run's directory. It holds everything the run may write (the
// workspace's writable layer, /tmp, /var/tmp), so that the kernel stops
// the run's writes at the limit and the host's disk never sees them, and
// the layers through which the container sees host directories.
type runFS struct {
	dir string
	// mounts are the overlays and the idmapped layers under them,
	// mounted in this order, unmounted in the other.
	mounts  []string
	mounted bool
}

// mountRunFS mounts a run's file system on dir. Its inodes are bounded
// too, one per page of the limit, since a tmpfs's inodes take memory
// that its size does not count.
func mountRunFS(dir string, disk int64) (*runFS, error) {
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", disk, max(1024, disk/4096))
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mount the run's file system: %w", err)
	}
	return &runFS{dir: dir, mounted: true}, nil
}

// path is name's path in the run's file system.
func (r *runFS) path(name string) string { return filepath.Join(r.dir, name) }

// mkdir makes the directory name with permission bits perm, owned by o.
func (r *runFS) mkdir(name string, perm os.FileMode, o owner) (string, error) {
	dir := r.path(name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("run file system: %w", err)
	}
	if err := os.Lchown(dir, int(o.uid), int(o.gid)); err != nil {
		return "", fmt.Errorf("run file system: %w", err)
	}
	// os.Chmod takes the sticky bit as os.ModeSticky, not as 0o1000.
	if err := unix.Chmod(dir, uint32(perm)); err != nil {
		return "", fmt.Errorf("run file system: %w", err)
	}
	return dir, nil
}

// overlay mounts, on the new directory name, an overlay of lowers (the
// topmost first) and, when upper is not empty, of the writable layer
// upper with its work directory work; without upper it is read-only.
//
// Every layer is named to the kernel as /proc/self/fd/N, a descriptor
// opened for the mount only, and that is all the container's
// /proc/self/mountinfo shows of them: nothing of the host's paths.
//
// Directory renames, metadata-only copies and the inode index are off so
// that the upper layer stays a plain record of files: every changed file
// is there whole, every deletion a whiteout, every replaced directory
// opaque.
func (r *runFS) overlay(name string, lowers []string, upper, work string) (string, error) {
	target := r.path(name)
	if err := os.Mkdir(target, 0o700); err != nil {
		return "", fmt.Errorf("overlay: %w", err)
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	open := func(dir string) (string, error) {
		fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", fmt.Errorf("overlay layer %s: %w", dir, err)
		}
		fds = append(fds, fd)
		return fmt.Sprintf("/proc/self/fd/%d", fd), nil
	}
	names := make([]string, len(lowers))
	for i, dir := range lowers {
		var err error
		if names[i], err = open(dir); err != nil {
			return "", err
		}
	}
	opts := "lowerdir=" + strings.Join(names, ":")
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if upper != "" {
		u, err := open(upper)
		if err != nil {
			return "", err
		}
		w, err := open(work)
		if err != nil {
			return "", err
		}
		opts += ",upperdir=" + u + ",workdir=" + w + ",redirect_dir=off,metacopy=off,index=off,xino=off"
	} else {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("overlay", target, "overlay", flags, opts); err != nil {
		return "", fmt.Errorf("mount an overlay of %s: %w", lowers[len(lowers)-1], err)
	}
	r.mounts = append(r.mounts, target)
	return target, nil
}

// unmountOverlays takes the overlays and their idmapped layers down, the
// last mounted first.
func (r *runFS) unmountOverlays() error {
	for len(r.mounts) > 0 {
		target := r.mounts[len(r.mounts)-1]
		if err := unmount(target); err != nil {
			return fmt.Errorf("unmount overlay: %w", err)
		}
		r.mounts = r.mounts[:len(r.mounts)-1]
	}
	return nil
}

// full reports whether the run's writes took all the file system had,
// in bytes or in inodes.
func (r *runFS) full() (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.dir, &st); err != nil {
		return false, fmt.Errorf("run file system: %w", err)
	}
	return st.Bavail == 0 || st.Ffree == 0, nil
}

// detach takes the file system off its directory, overlays first, and
// returns a descriptor of its root, the only way left to it: the kernel
// frees it when the descriptor is closed, by its holder or by the end of
// the process, so that a change set no one applies or discards, or a
// core that dies, leaves nothing mounted and no memory taken.
func (r *runFS) detach() (*os.File, error) {
	if err := r.unmountOverlays(); err != nil {
		return nil, err
	}
	root, err := os.OpenFile(r.dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("run file system: %w", err)
	}
	if err := unix.Unmount(r.dir, unix.MNT_DETACH); err != nil {
		root.Close()
		return nil, fmt.Errorf("detach the run's file system: %w", err)
	}
	r.mounted = false
	return root, nil
}

// unmount takes the file system and the overlays in it down at once:
// each unmount waits for the kernel's readers to move on, so one detach of
// the whole tree is cheaper than one unmount each. What is already down is
// left.
func (r *runFS) unmount() error {
	if !r.mounted {
		return r.unmountOverlays()
	}
	if err := unix.Unmount(r.dir, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount the run's file system: %w", err)
	}
	r.mounts, r.mounted = nil, false
	return nil
}

// unmount unmounts target, and detaches it when something outside the
// container still looks at it: the container is gone, so the kernel
// finishes when it can.
func unmount(target string) error {
	err := unix.Unmount(target, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(target, unix.MNT_DETACH)
	}
	return err
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
