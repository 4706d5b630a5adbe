package sandbox

import (
	"fmt"
	"os"
	"slices"
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

// container is what one run's container is given of the host, every
// directory from the run's own file system.
type container struct {
	owner     owner
	workspace string // seen at /workspace: an overlay of the workspace
	writable  bool   // whether the workspace's overlay has a writable layer
	tmp       string // seen at /tmp
	varTmp    string // seen at /var/tmp
	binds     []Bind // the spec's, each Source an overlay of the spec's
	// netns is the egress's network namespace, which nspawn is started
	// in and the container shares; nil, the container has one of
	// nspawn's own with loopback only. (nspawn's --network-namespace-path
	// joins from inside the container's user namespace, which the kernel
	// refuses for a namespace the host's owns.)
	netns *os.File
	env   []string // after baseEnv, before the spec's
	git   gitMasks // what the mask layer holds of git's
}

// nspawnArgs is the systemd-nspawn command line for one run: the image as
// a read-only root, no capabilities, no network but loopback or the
// egress's, /tmp, /var/tmp and the workspace view bound from the run's
// file system, the kernel's command line hidden, and the command as PID 2
// under nspawn's minimal init, whose end ends the container.
func nspawnArgs(image string, spec Spec, c container) []string {
	args := []string{
		// Neither machined nor a scope of nspawn's own: the run's unit or
		// control group is the one nspawn is started in.
		"--register=no", "--keep-unit",
		"--quiet", "--console=pipe",
		"--directory=" + image, "--read-only",
		"--bind=" + c.tmp + ":/tmp", "--bind=" + c.varTmp + ":/var/tmp",
		// How the host booted is none of the command's business. nspawn
		// makes the container's /proc after the binds from the host, so
		// the empty file is the container's own /dev/null
		// (--inaccessible= needs /run/systemd/inaccessible, which only a
		// host booted with systemd has).
		"--bind-ro=/dev/null:/proc/cmdline",
		"--timezone=off", "--resolv-conf=off",
		"--drop-capability=all", "--no-new-privileges=yes",
		"--kill-signal=SIGKILL",
		// No RLIMIT_NPROC: it counts every process of the uid on the
		// host, not the container's; the task limit is the unit's or the
		// control group's.
		"--rlimit=RLIMIT_CORE=0",
	}
	if c.netns == nil {
		args = append(args, "--private-network")
	}
	if c.owner.uid != 0 {
		// The container's root is the workspace's owner and nobody
		// else: its files are the owner's, and a way out of the
		// container leads to an unprivileged user, not to root.
		args = append(args, fmt.Sprintf("--private-users=%d:1", c.owner.uid), "--private-users-ownership=map")
	}
	if c.writable {
		args = append(args, "--bind="+c.workspace+":"+containerWorkspace)
	} else {
		args = append(args, "--bind-ro="+c.workspace+":"+containerWorkspace)
	}
	for _, b := range c.binds {
		args = append(args, "--bind-ro="+b.Source+":"+b.Target)
	}
	args = append(args, "--chdir="+spec.workdir())
	for _, kv := range slices.Concat(baseEnv, c.env, spec.Env) {
		args = append(args, "--setenv="+kv)
	}
	args = append(args, "--as-pid2", "--")
	return append(args, spec.Argv...)
}
