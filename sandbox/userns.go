package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// User is an unprivileged user of the host that the sandbox makes every
// container's root ([Config.User]): a command that finds its way out of
// its container is that user, never the host's root.
type User struct {
	UID, GID uint32
}

// idmapWorkspace and idmapBind are the names, in a run's file system, of
// the workspace and of each bound directory (idmapBind-<i>) as the sandbox
// user sees them.
const (
	idmapWorkspace = "workspace-as-root"
	idmapBind      = "bind-as-root"
)

// idmaps are the user namespaces that name the sandbox's idmapped mounts,
// one for each owner of a workspace, each mapping only that owner's uid
// and gid to the sandbox user's; kept for the sandbox's life, since the
// kernel makes a user namespace only with a process in it.
type idmaps struct {
	mu      sync.Mutex
	byOwner map[owner]*os.File
}

// userns is the user namespace that maps from to to, made the first time
// it is asked for.
func (m *idmaps) userns(from owner, to User) (*os.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ns, ok := m.byOwner[from]; ok {
		return ns, nil
	}
	ns, err := newUserNamespace(from, to)
	if err != nil {
		return nil, err
	}
	if m.byOwner == nil {
		m.byOwner = map[owner]*os.File{}
	}
	m.byOwner[from] = ns
	return ns, nil
}

// newUserNamespace makes a user namespace whose only ids are from's uid and
// gid, which are to's on the host, and returns its descriptor. The kernel
// makes one only with a process in it: cat, started in it, waits on an
// empty pipe until the descriptor is open, and ends with the pipe.
func newUserNamespace(from owner, to User) (*os.File, error) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return nil, fmt.Errorf("make a user namespace for the sandbox user: %w (install coreutils)", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make a user namespace for the sandbox user: %w", err)
	}
	defer w.Close()
	cmd := exec.Command(cat)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: int(from.uid), HostID: int(to.UID), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: int(from.gid), HostID: int(to.GID), Size: 1}},
	}
	err = cmd.Start()
	r.Close()
	if err != nil {
		return nil, fmt.Errorf("make a user namespace for the sandbox user: %w", err)
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	w.Close()
	cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("make a user namespace for the sandbox user: %w", err)
	}
	return ns, nil
}

// idmapped mounts, on the new directory name, a copy of dir's mount (not
// of what is mounted inside it) through which the ids of userns are the
// host's: the files of the owner it maps are the sandbox user's. An
// overlay takes it as a layer as it takes dir, and what it copies up of
// it belongs to the sandbox user.
func (r *runFS) idmapped(name, dir string, userns *os.File) (string, error) {
	target := r.path(name)
	if err := os.Mkdir(target, 0o700); err != nil {
		return "", fmt.Errorf("idmapped mount: %w", err)
	}
	tree, err := idmappedTree(dir, userns)
	if err != nil {
		return "", err
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", fmt.Errorf("idmapped mount of %s: %w", dir, err)
	}
	r.mounts = append(r.mounts, target)
	return target, nil
}

// idmappedTree is a detached copy of dir's mount, idmapped by userns.
func idmappedTree(dir string, userns *os.File) (int, error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("idmapped mount of %s: %w", dir, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns.Fd())}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(tree)
		return -1, fmt.Errorf("%w: show %s to the sandbox user through an idmapped mount: %v (it needs Linux 5.19 or later and a file system that maps ids, such as ext4, btrfs or xfs, tmpfs from Linux 6.3; or set sandbox.user to \"\" to run commands as root, capabilities dropped)", ErrWorkspace, dir, err)
	}
	return tree, nil
}

// CheckUser says whether the sandbox can make u the root of the
// containers of a workspace at dir: whether the kernel and dir's file
// system take an idmapped mount that shows dir's owner's files as u's.
// It mounts nothing.
func CheckUser(dir string, u User) error {
	if u.UID == 0 {
		return errRootUser
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("%w: %v", ErrWorkspace, err)
	}
	ns, err := newUserNamespace(owner{uid: st.Uid, gid: st.Gid}, u)
	if err != nil {
		return err
	}
	defer ns.Close()
	tree, err := idmappedTree(dir, ns)
	if err != nil {
		return err
	}
	return unix.Close(tree)
}

// errRootUser refuses a sandbox user of uid 0, which would be no user
// namespace at all.
var errRootUser = errors.New("the sandbox user is root: name an unprivileged user (sandbox.user), or none to run commands as the workspace's owner")

// LookupUser is the host user name, for [Config.User]; nil, and no error,
// for "".
func LookupUser(name string) (*User, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the sandbox user %q: %w", name, err)
	}
	uid, uerr := strconv.ParseUint(u.Uid, 10, 32)
	gid, gerr := strconv.ParseUint(u.Gid, 10, 32)
	if uerr != nil || gerr != nil {
		return nil, fmt.Errorf("the sandbox user %q has uid %q and gid %q", name, u.Uid, u.Gid)
	}
	if uid == 0 {
		return nil, errRootUser
	}
	return &User{UID: uint32(uid), GID: uint32(gid)}, nil
}

// asRoot is the workspace ws of owner o as the container's root sees it,
// and who that root is on the host: with a sandbox user, an idmapped
// mount in the run's file system through which o's files are that user's;
// without one, ws itself, and o.
func (s *Sandbox) asRoot(fsys *runFS, ws string, o owner) (string, owner, error) {
	lower, err := s.idmappedAs(fsys, idmapWorkspace, ws, o)
	if err != nil || s.user == nil {
		return lower, o, err
	}
	return lower, owner{uid: s.user.UID, gid: s.user.GID}, nil
}

// boundAsRoot is the bound directory dir as the container's root sees it:
// with a sandbox user, an idmapped mount named name through which the
// files of dir's owner are that user's, as the workspace's are (a kept
// tool's directory is core's alone, and the container's root must read
// it); without one, dir itself.
func (s *Sandbox) boundAsRoot(fsys *runFS, name, dir string) (string, error) {
	if s.user == nil {
		return dir, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("bind %s: %w", dir, err)
	}
	return s.idmappedAs(fsys, name, dir, owner{uid: st.Uid, gid: st.Gid})
}

// idmappedAs mounts dir, owned by o, on name in the run's file system
// through the user namespace that maps o to the sandbox user; without a
// sandbox user it is dir itself.
func (s *Sandbox) idmappedAs(fsys *runFS, name, dir string, o owner) (string, error) {
	if s.user == nil {
		return dir, nil
	}
	ns, err := s.idmaps.userns(o, *s.user)
	if err != nil {
		return "", err
	}
	return fsys.idmapped(name, dir, ns)
}
