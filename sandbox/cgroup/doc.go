// Package cgroup gives one sandboxed run a control group of its own where
// no systemd unit can hold its limits: a build machine, CI, a development
// box without systemd as PID 1.
//
// [New] makes <own cgroup>/shelldon/<name> in every hierarchy it needs —
// under the caller's own cgroup, so whatever bounds the caller also bounds
// the run — and writes the [Limits] into it. [Group.Start] starts a
// command already inside the group, so nothing it forks can be outside;
// [Group.Kill] ends every process in it, [Group.Stats] reads what the run
// used, and [Group.Delete] removes it. [Load] opens an existing group, such
// as a turn unit's, to read its statistics.
//
// Both cgroup layouts work: the unified v2 hierarchy (a Raspberry Pi), and
// v1 with one hierarchy per controller (older hosts, and hybrid hosts
// whose controllers all sit in v1). github.com/containerd/cgroups/v3 tells
// which the host has; the few files a group needs are read and written
// here (files.go says why). Where neither offers a writable hierarchy with the memory and pids
// controllers, New fails with [ErrUnavailable].
package cgroup
