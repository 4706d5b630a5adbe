// Package systemdhost boots a real systemd for tests on machines whose own
// PID 1 is not systemd: it builds the test-host image (images/testhost.recipe)
// and boots it with `systemd-nspawn -b` on a throwaway overlay of that root,
// with the container's system bus socket reachable from the host.
package systemdhost
