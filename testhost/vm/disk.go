package vm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"shelldon/sandbox/image"
)

// diskRoom is the free space a guest's disk has on top of its files. The
// disk is a sparse file, so the room costs the host nothing until the
// guest writes to it; 2 GiB is enough for the guest to build shelldon's
// own sandbox image.
const diskRoom = 2 << 30

// guestHostname names every guest, so its console and prompts say where
// they are.
const guestHostname = "shelldon-vm"

// guestNetwork sets up the guest's one network card as qemu's user-mode
// network expects it: its first address and its gateway. Static, so the
// boot waits on no DHCP.
const guestNetwork = `[Match]
Name=en* eth*

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
LinkLocalAddressing=no
IPv6AcceptRA=no
`

// enabledUnits are the symlinks `systemctl enable systemd-networkd` would
// make, relative to /etc/systemd/system.
var enabledUnits = map[string]string{
	"multi-user.target.wants/systemd-networkd.service":                 "/lib/systemd/system/systemd-networkd.service",
	"sockets.target.wants/systemd-networkd.socket":                     "/lib/systemd/system/systemd-networkd.socket",
	"network-online.target.wants/systemd-networkd-wait-online.service": "/lib/systemd/system/systemd-networkd-wait-online.service",
}

// disk is what a test's disk is made from.
type disk struct {
	image     string // the cached root file system, only ever read
	path      string // the disk image to make
	work      string // a directory for the root's copy, removed when done
	publicKey []byte // authorized for the guest's root
	debs      []string
	trees     []string // host directories copied to the same path in the root
	mkfs      string
	nspawn    string
}

type diskSize struct{ apparent, allocated int64 }

// makeDisk copies the cached root, sets the copy up for this test and
// makes an ext4 image of it; the copy is removed once the image exists.
func makeDisk(ctx context.Context, d disk) (size diskSize, err error) {
	root := filepath.Join(d.work, "root")
	defer func() {
		if rmErr := os.RemoveAll(root); rmErr != nil && err == nil {
			err = fmt.Errorf("remove the root's copy: %w", rmErr)
		}
	}()
	if out, err := exec.CommandContext(ctx, "cp", "-a", d.image, root).CombinedOutput(); err != nil {
		return diskSize{}, fmt.Errorf("copy %s: %w: %s", d.image, err, out)
	}
	if err := configure(root, d.publicKey); err != nil {
		return diskSize{}, err
	}
	if err := installDebs(ctx, d.nspawn, root, d.debs); err != nil {
		return diskSize{}, err
	}
	for _, tree := range d.trees {
		to := filepath.Join(root, tree)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return diskSize{}, fmt.Errorf("copy %s into the guest: %w", tree, err)
		}
		// Without the lock files systemd-nspawn keeps beside a root it
		// runs: a sandbox another test runs meanwhile makes and removes
		// them, and a copy that met one vanishing would fail.
		copyTree := fmt.Sprintf("tar -C %s --exclude='.#*.lck' -cf - %s | tar -C %s -xpf -",
			shellQuote(filepath.Dir(tree)), shellQuote(filepath.Base(tree)), shellQuote(filepath.Dir(to)))
		if out, err := exec.CommandContext(ctx, "sh", "-c", copyTree).CombinedOutput(); err != nil {
			return diskSize{}, fmt.Errorf("copy %s into the guest: %w: %s", tree, err, out)
		}
	}
	used, err := treeSize(root)
	if err != nil {
		return diskSize{}, err
	}
	// A quarter more for ext4's own metadata, then the room, in MiB.
	want := (used + used/4 + diskRoom + 1<<20 - 1) &^ (1<<20 - 1)
	if err := makeSparseFile(d.path, want); err != nil {
		return diskSize{}, err
	}
	// The inode tables are zeroed now, on the host, rather than by the
	// guest's kernel in the background, where TCG makes it slow.
	args := []string{"-q", "-F", "-L", guestHostname, "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0", "-d", root, d.path}
	if out, err := exec.CommandContext(ctx, d.mkfs, args...).CombinedOutput(); err != nil {
		return diskSize{}, fmt.Errorf("mkfs.ext4: %w: %s", err, out)
	}
	// Reserved before the guest boots: a write the host cannot store
	// pauses the whole VM, silently, for the rest of the test.
	if err := reserveBlocks(d.path); err != nil {
		return diskSize{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(d.path, &st); err != nil {
		return diskSize{}, fmt.Errorf("stat %s: %w", d.path, err)
	}
	return diskSize{apparent: st.Size, allocated: st.Blocks * 512}, nil
}

// configure makes the root's copy this test's machine: its own machine id
// (so systemd does not take the boot for a first boot and prompt on the
// console), the host name, the network and the test's ssh key for root.
func configure(root string, publicKey []byte) error {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return fmt.Errorf("machine id: %w", err)
	}
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{"etc/machine-id", []byte(hex.EncodeToString(id) + "\n"), 0o444},
		{"etc/hostname", []byte(guestHostname + "\n"), 0o644},
		{"etc/systemd/network/10-qemu-user.network", []byte(guestNetwork), 0o644},
		{"root/.ssh/authorized_keys", publicKey, 0o600},
	}
	if err := os.MkdirAll(filepath.Join(root, "root/.ssh"), 0o700); err != nil {
		return fmt.Errorf("guest root's .ssh: %w", err)
	}
	for _, f := range files {
		path := filepath.Join(root, f.path)
		// Remove first: the copy's file may be read-only (machine-id).
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("guest %s: %w", f.path, err)
		}
		if err := os.WriteFile(path, f.data, f.mode); err != nil {
			return fmt.Errorf("guest %s: %w", f.path, err)
		}
	}
	for link, target := range enabledUnits {
		path := filepath.Join(root, "etc/systemd/system", link)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("enable %s: %w", filepath.Base(link), err)
		}
		if err := os.Symlink(target, path); err != nil && !os.IsExist(err) {
			return fmt.Errorf("enable %s: %w", filepath.Base(link), err)
		}
	}
	return nil
}

// installDebs installs debs into the root with dpkg, run by
// systemd-nspawn inside it, so that their maintainer scripts see the
// guest's own system (without a running systemd, as when a board's
// image is made).
func installDebs(ctx context.Context, nspawn, root string, debs []string) error {
	if len(debs) == 0 {
		return nil
	}
	// Not under /tmp, which systemd-nspawn mounts afresh.
	const staged = "/var/cache/shelldon-test-debs"
	dir := filepath.Join(root, staged)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("stage debs: %w", err)
	}
	defer os.RemoveAll(dir)
	var args []string
	if !image.SystemdIsInit() {
		args = append(args, "--register=no", "--keep-unit")
	}
	args = append(args, "--quiet", "--console=pipe", "--private-network", "--machine="+guestHostname+"-"+filepath.Base(filepath.Dir(root)),
		"--setenv=DEBIAN_FRONTEND=noninteractive", "-D", root, "--as-pid2", "--", "dpkg", "-i")
	for _, deb := range debs {
		data, err := os.ReadFile(deb)
		if err != nil {
			return fmt.Errorf("stage debs: %w", err)
		}
		name := filepath.Base(deb)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("stage debs: %w", err)
		}
		args = append(args, filepath.Join(staged, name))
	}
	if out, err := exec.CommandContext(ctx, nspawn, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg -i in the guest's root: %w: %s", err, out)
	}
	return nil
}

// treeSize is about what the files under root take on an ext4 with 4 KiB
// blocks; files linked more than once count each time, which only adds
// room.
func treeSize(root string) (int64, error) {
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		blocks := int64(1)
		if info.Mode().IsRegular() {
			blocks = (info.Size() + 4095) / 4096
		}
		total += blocks * 4096
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", root, err)
	}
	return total, nil
}

// reserveBlocks gives the disk image at path every block of its length
// on the host file system, without writing them, and says so plainly
// when the host has no room.
func reserveBlocks(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("reserve the disk image's blocks: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reserve the disk image's blocks: %w", err)
	}
	// Mode 0 allocates the holes as unwritten extents: instant, and the
	// image's content is unchanged.
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, st.Size()); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("reserve the guest's %d MiB disk: the host's file system holding %s has no room for it (free some and run the test again): %w", st.Size()>>20, filepath.Dir(path), err)
		}
		return fmt.Errorf("reserve the guest's %d MiB disk at %s: %w", st.Size()>>20, path, err)
	}
	return nil
}

func makeSparseFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("disk image: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("disk image: %w", err)
	}
	return nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
