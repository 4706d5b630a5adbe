package image

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNoEmulation means this host cannot run the programs of the
// architecture asked for: qemu-user-static is not registered with
// binfmt_misc, or not with the F flag that lets it run inside a root
// (mmdebstrap's chroot, systemd-nspawn's container) that lacks it.
var ErrNoEmulation = errors.New("no emulation for the architecture")

// BinfmtDir is where the kernel lists the interpreters binfmt_misc runs
// foreign binaries with.
const BinfmtDir = "/proc/sys/fs/binfmt_misc"

// binfmtNames are the binfmt_misc entries qemu-user-static registers,
// by the Debian architecture they run.
var binfmtNames = map[string]string{"arm64": "qemu-aarch64", "armhf": "qemu-arm", "amd64": "qemu-x86_64"}

// CheckEmulation says whether this host runs arch's programs through
// binfmt_misc, and if not, what is missing and how to get it.
func CheckEmulation(arch string) error {
	name, ok := binfmtNames[arch]
	if !ok {
		known := make([]string, 0, len(binfmtNames))
		for a := range binfmtNames {
			known = append(known, a)
		}
		slices.Sort(known)
		return fmt.Errorf("%w: %q: want one of %s", ErrUnsupportedArch, arch, strings.Join(known, ", "))
	}
	return checkBinfmt(BinfmtDir, arch, name)
}

// checkBinfmt reads binfmt_misc's entry name under dir.
func checkBinfmt(dir, arch, name string) error {
	fix := fmt.Sprintf("as root, make test-deps installs qemu-user-static and registers it; by hand: cat /usr/lib/binfmt.d/%s.conf > %s/register", name, dir)
	entry, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("%w: %s programs need binfmt_misc's %s entry, which this host lacks (%v); %s", ErrNoEmulation, arch, name, err, fix)
	}
	lines := strings.Split(string(entry), "\n")
	if lines[0] != "enabled" {
		return fmt.Errorf("%w: binfmt_misc's %s entry is %s; as root: echo 1 > %s", ErrNoEmulation, name, lines[0], filepath.Join(dir, name))
	}
	for _, line := range lines {
		if flags, ok := strings.CutPrefix(line, "flags: "); ok && strings.Contains(flags, "F") {
			return nil
		}
	}
	return fmt.Errorf("%w: binfmt_misc's %s entry lacks the F flag, so it cannot run inside a root without qemu: write -1 to %s, then %s", ErrNoEmulation, name, filepath.Join(dir, name), fix)
}
