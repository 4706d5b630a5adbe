package cgroup

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestParseCgroupFile(t *testing.T) {
	got := parseCgroupFile([]byte("12:cpu,cpuacct:/user.slice\n4:memory:/process_api/6e31\n1:name=systemd:/init.scope\n0::/user.slice/session-1.scope\n\nbroken line\n"))
	want := map[string]string{"cpu": "/user.slice", "cpuacct": "/user.slice", "memory": "/process_api/6e31",
		"name=systemd": "/init.scope", "": "/user.slice/session-1.scope"}
	if !maps.Equal(got, want) {
		t.Errorf("parseCgroupFile = %v, want %v", got, want)
	}
}

// TestOwnV1PathBelowTheMountRoot: in a container whose v1 hierarchies are
// mounted from its own group, /proc/self/cgroup still names that group
// from the host's root, and the group is at the mount's root.
func TestOwnV1PathBelowTheMountRoot(t *testing.T) {
	mountinfo := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,nosuid shared:9 - cgroup cgroup rw,memory
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	roots := v1MountRoots([]byte(mountinfo))
	if want := map[string]string{"rw": "/", "memory": "/docker/abc", "cpu": "/", "cpuacct": "/"}; !maps.Equal(roots, want) {
		t.Errorf("v1MountRoots = %v, want %v", roots, want)
	}
	paths := map[string]string{"memory": "/docker/abc/sub", "cpu": "/docker/abc", "pids": "/other", "": "/"}
	belowMountRoots(paths, map[string]string{"memory": "/docker/abc", "cpu": "/", "pids": "/elsewhere"})
	if want := map[string]string{"memory": "/sub", "cpu": "/docker/abc", "pids": "/other", "": "/"}; !maps.Equal(paths, want) {
		t.Errorf("belowMountRoots = %v, want %v", paths, want)
	}
}

// TestStatsReadTheKernelsCounters reads Stats from the files the kernel
// writes, in both layouts, from a fake tree; a file the kernel does not
// offer reads as 0, one that does not hold a number is an error naming it.
func TestStatsReadTheKernelsCounters(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"v2/memory.peak":                        "73400320\n",
		"v2/memory.events":                      "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n",
		"v2/cpu.stat":                           "usage_usec 250000\nuser_usec 200000\nsystem_usec 50000\n",
		"v2/pids.current":                       "3\n",
		"memory/g/memory.max_usage_in_bytes":    "1048576\n",
		"memory/g/memory.oom_control":           "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n",
		"cpuacct/g/cpuacct.usage":               "1500000000\n",
		"pids/g/pids.current":                   "7\n",
		"broken/memory.peak":                    "max\n",
		"v2-without-memory-controller/cpu.stat": "usage_usec 10\n",
	})
	for _, tc := range []struct {
		name string
		b    backend
		want Stats
	}{
		{"v2", v2Group{dir: root + "/v2"}, Stats{MemoryPeak: 73400320, OOMKills: 1, CPUTime: 250 * time.Millisecond, Tasks: 3}},
		{"v1", v1Group{dirs: []v1Dir{{v1Memory, root + "/memory/g"}, {v1CPUAcct, root + "/cpuacct/g"}, {v1Pids, root + "/pids/g"}}},
			Stats{MemoryPeak: 1 << 20, OOMKills: 4, CPUTime: 1500 * time.Millisecond, Tasks: 7}},
		{"v1 without cpuacct", v1Group{dirs: []v1Dir{{v1Memory, root + "/memory/g"}, {v1Pids, root + "/pids/g"}}},
			Stats{MemoryPeak: 1 << 20, OOMKills: 4, Tasks: 7}},
		{"v2 without the memory and pids controllers", v2Group{dir: root + "/v2-without-memory-controller"}, Stats{CPUTime: 10 * time.Microsecond}},
	} {
		if got, err := tc.b.stats(); err != nil || got != tc.want {
			t.Errorf("%s: stats() = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := (v2Group{dir: root + "/broken"}).stats(); err == nil || !strings.Contains(err.Error(), "broken/memory.peak") {
		t.Errorf("stats() of a memory.peak of %q = %v, want an error naming the file", "max", err)
	}
}

func TestCheckGroupPath(t *testing.T) {
	for _, p := range []string{"/", "/system.slice/shelldon-turn@t-1.service", "/shelldon/run-1"} {
		if err := checkGroupPath(p); err != nil {
			t.Errorf("checkGroupPath(%q) = %v, want nil", p, err)
		}
	}
}
