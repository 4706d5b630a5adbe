// Package sandbox runs one command of the pet's in a throwaway
// systemd-nspawn container and reports what it did.
//
// Every program shelldon runs for the model goes through [Sandbox.Run]: a
// shell command the policy calls safe, an approved run_shell or git call,
// the pytest gate, a promoted self-coded tool. The container's root is
// the sandbox image (package [shelldon/sandbox/image]), read-only; no
// capabilities; no network but loopback, or with [Spec.Network] a way out
// through core's own proxy that dials public addresses only, by
// http_get's rules ([shelldon/daemon/fetch.Dialer]); and no host path but the
// workspace, seen one of three ways ([View]): read-only; captured, through
// an overlay whose upper layer is the exact record of what the command
// changed, returned as a [ChangeSet] that the caller shows the owner and
// then applies or discards; or scratch, an overlay thrown away after the
// run. In every view the workspace's credential-shaped files and the
// vault are hidden by a layer of whiteouts above it, every host directory
// is named to the kernel by a descriptor (the container's mountinfo shows
// no host path), and /proc/cmdline is empty.
//
// Everything a run writes — the writable layer, /tmp, /var/tmp — lives on
// a tmpfs of the run's own of [Limits.Disk] bytes, so a command that
// writes too much is told the disk is full and the host's disk never
// sees it.
//
// Limits (memory, CPU, tasks, wall time) hold through a transient unit
// shelldon-run@<id>.service where core passes its systemd client
// ([Config.Units]), and through a control group of the run's own
// elsewhere (package [shelldon/sandbox/cgroup]), with the wall time kept
// by the sandbox; the output cap is always the sandbox's own.
// [Result.Enforced] says which held.
// When the run ends — normally, by timeout, or by cancellation — every
// process it started is gone.
//
// Where the workspace belongs to an unprivileged user (the service user
// on a board), the container runs in a user namespace whose root is that
// user, so writes through the overlay work and nothing in the container
// is root on the host.
package sandbox
