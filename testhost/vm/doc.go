// Package vm boots a whole Debian machine under qemu for end-to-end tests
// that a container cannot host: a kernel of its own with cgroup v2,
// systemd as PID 1, and memory limits that really OOM-kill.
//
// The root file system is built once from images/testvm.recipe into
// [CacheDir] and never changed; each test gets its own ext4 disk made from
// a copy of it, with a fresh ssh key, the network set up and any .deb
// files installed, and boots it straight from the root's kernel and
// initrd. Tests reach the guest over ssh on a loopback port; the guest
// reaches nothing but the host ports a test forwards to it.
package vm
