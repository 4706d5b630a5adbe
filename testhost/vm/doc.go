// Package vm boots a whole Debian machine under qemu for end-to-end tests
// that a container cannot host: a kernel of its own with cgroup v2,
// systemd as PID 1, and memory limits that really OOM-kill.
//
// A guest is amd64, this host's architecture, or arm64, the board's
// ([Options.Arch]): the architecture decides the qemu (qemu-system-x86_64,
// or qemu-system-aarch64 on the virt machine with a Cortex-A53, always
// under TCG), the serial console (ttyS0, ttyAMA0) and the recipe.
//
// The root file system is built once from images/testvm.recipe (or
// images/testvm-arm64.recipe, under qemu-user-static) into [CacheDir] and
// never changed; each test gets its own ext4 disk made from
// a copy of it, with a fresh ssh key, the network set up and any .deb
// files installed, and boots it straight from the root's kernel and
// initrd. Tests reach the guest over ssh on a loopback port; the guest
// reaches nothing but the host ports a test forwards to it.
//
// The disk's every block is reserved on the host before the boot: qemu
// pauses a guest whose write the host cannot store, and a paused guest
// answers nothing for the rest of the test. When ssh stops reaching a
// booted guest all the same, the test's log says once what qemu's
// monitor, qemu's threads, the host's free space, the ssh master
// connection and the console's end showed at that moment.
package vm
