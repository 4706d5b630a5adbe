package sandbox

import (
	"fmt"
)

// baseEnv is the environment every command starts with. Bytecode and
// pytest's cache stay out of the workspace, so that running the tests
// does not itself show up as a change to apply.
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=/tmp",
	"LANG=C.UTF-8",
	"PYTHONDONTWRITEBYTECODE=1",
	"PYTEST_ADDOPTS=-p no:cacheprovider",
}

// nspawnArgs is the systemd-nspawn command line for one run: the image as
// a read-only root with a private /tmp, no capabilities, no network
// unless asked, the workspace view bound at /workspace, and the command
// as PID 2 under nspawn's minimal init, whose end ends the container.
func nspawnArgs(image string, spec Spec, view workspaceView) []string {
	args := []string{
		// Neither machined nor a scope of nspawn's own: the run's unit or
		// control group is the one nspawn is started in.
		"--register=no", "--keep-unit",
		"--quiet", "--console=pipe",
		"--directory=" + image, "--read-only",
		"--tmpfs=/tmp:mode=1777", "--tmpfs=/var/tmp:mode=1777",
		"--timezone=off",
		"--drop-capability=all", "--no-new-privileges=yes",
		"--kill-signal=SIGKILL",
		// No RLIMIT_NPROC: it counts every process of the uid on the
		// host, not the container's; the task limit is the unit's or the
		// control group's.
		"--rlimit=RLIMIT_CORE=0",
	}
	if spec.Network {
		args = append(args, "--resolv-conf=bind-host")
	} else {
		args = append(args, "--private-network", "--resolv-conf=off")
	}
	if view.owner.uid != 0 {
		// The container's root is the workspace's owner and nobody
		// else: its files are the owner's, and a way out of the
		// container leads to an unprivileged user, not to root.
		args = append(args, fmt.Sprintf("--private-users=%d:1", view.owner.uid), "--private-users-ownership=map")
	}
	if view.merged != "" {
		args = append(args, "--bind="+view.source()+":"+containerWorkspace)
	} else {
		args = append(args, "--bind-ro="+view.source()+":"+containerWorkspace)
	}
	for _, b := range spec.Binds {
		args = append(args, "--bind-ro="+b.Source+":"+b.Target)
	}
	args = append(args, "--chdir="+spec.workdir())
	for _, kv := range append(append([]string{}, baseEnv...), spec.Env...) {
		args = append(args, "--setenv="+kv)
	}
	args = append(args, "--as-pid2", "--")
	return append(args, spec.Argv...)
}
