package cgroup

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"
)

// fakeHost is a host whose cgroup tree is plain files under t.TempDir and
// whose own cgroup is own in every hierarchy.
func fakeHost(t *testing.T, mode cgroups.CGMode, own string) host {
	t.Helper()
	return host{
		mode: mode,
		root: t.TempDir(),
		nestV1: func(suffix string) v1Path {
			return staticV1Path(path.Join(own, suffix))
		},
		nestV2: func(suffix string) (string, error) {
			return path.Join(own, suffix), nil
		},
	}
}

// writeFiles creates files (path relative to root: content) and their
// directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readLimit reads a file New wrote into the fake tree.
func readLimit(t *testing.T, p string) string {
	t.Helper()
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatalf("limit file: %v", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewRejectsBadNames(t *testing.T) {
	for _, name := range []string{
		"", ".", "..", "../escape", "a/b", "/abs", ".hidden", "a b", "a\x00b", "tab\t", "ü",
		"semi;colon", "$(x)", "star*", strings.Repeat("n", maxNameLen+1),
	} {
		t.Run("", func(t *testing.T) {
			// A fake v2 tree that could take any name: only the check stops it.
			h := fakeHost(t, cgroups.Unified, "/")
			writeFiles(t, h.root, map[string]string{
				"cgroup.controllers": "memory pids", "cgroup.subtree_control": "", "cgroup.procs": "",
			})
			g, err := h.newGroup(name, Limits{})
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("New(%q) = %v, %v; want ErrInvalid", name, g, err)
			}
		})
	}
}

func TestNewAcceptsGoodNames(t *testing.T) {
	for _, name := range []string{"a", "run-20260101T120000-0a1b2c3d4e5f", "turn@42", "x.y_z", strings.Repeat("n", maxNameLen)} {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v, want nil", name, err)
		}
	}
}

func TestNewRejectsBadLimits(t *testing.T) {
	for _, l := range []Limits{
		{MemoryMax: -1},
		{TasksMax: -5},
		{CPUQuota: -0.5},
		{CPUQuota: math.NaN()},
		{CPUQuota: math.Inf(1)},
		{CPUQuota: 0.001},
		{CPUQuota: 1e300},
	} {
		if g, err := thisHost().newGroup("limits", l); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, %v; want ErrInvalid", l, g, err)
		}
	}
}

func TestLoadRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"", "relative", "/a/../b", "/a/", "//a", "/sys/fs/cgroup/x"} {
		if g, err := thisHost().load(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("Load(%q) = %v, %v; want ErrInvalid", p, g, err)
		}
	}
}

func TestNewWithoutControllersIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  cgroups.CGMode
		own   string
		files map[string]string
	}{
		{name: "no cgroup filesystem", mode: cgroups.Unavailable, own: "/"},
		{name: "v1 without memory (Raspberry Pi without cgroup_enable=memory)", mode: cgroups.Hybrid, own: "/",
			files: map[string]string{"pids/cgroup.procs": "", "cpu/cgroup.procs": "", "freezer/cgroup.procs": ""}},
		{name: "v1 without pids", mode: cgroups.Legacy, own: "/",
			files: map[string]string{"memory/cgroup.procs": ""}},
		{name: "v1 without any hierarchy", mode: cgroups.Legacy, own: "/"},
		{name: "v2 without memory", mode: cgroups.Unified, own: "/",
			files: map[string]string{"cgroup.controllers": "cpuset cpu io pids", "cgroup.subtree_control": "", "cgroup.procs": "1"}},
		{name: "v2 own cgroup holds processes and has not delegated", mode: cgroups.Unified, own: "/system.slice/shelldon.service",
			files: map[string]string{
				"system.slice/shelldon.service/cgroup.controllers":     "cpu memory pids",
				"system.slice/shelldon.service/cgroup.subtree_control": "",
				"system.slice/shelldon.service/cgroup.procs":           "4242\n",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakeHost(t, tc.mode, tc.own)
			writeFiles(t, h.root, tc.files)
			g, err := h.newGroup("run-1", Limits{MemoryMax: 64 << 20, TasksMax: 20})
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("New = %v, %v; want ErrUnavailable", g, err)
			}
			if !strings.Contains(err.Error(), "cgroup_enable=memory") {
				t.Errorf("New error %q does not name the fix", err)
			}
		})
	}
}

// v2Tree is a fake unified hierarchy whose own cgroup is own.
func v2Tree(t *testing.T, own, controllers, subtree, procs string) host {
	t.Helper()
	h := fakeHost(t, cgroups.Unified, own)
	writeFiles(t, h.root, map[string]string{
		"cgroup.subtree_control":                             "",
		path.Join(own, "cgroup.controllers"):                 controllers,
		path.Join(own, "cgroup.subtree_control"):             subtree,
		path.Join(own, "cgroup.procs"):                       procs,
		path.Join(own, parentName, "cgroup.subtree_control"): "",
	})
	return h
}

func TestNewOnV2WritesLimits(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		own, controllers, subtree string
		procs                     string
		limits                    Limits
		wantEnforced              []string
		wantFiles                 map[string]string // in the group's directory
		wantSubtreeControl        string            // written to own's cgroup.subtree_control
	}{
		{
			name: "root cgroup, every limit", own: "/", controllers: "cpuset cpu io memory pids", procs: "1\n",
			limits:             Limits{MemoryMax: 64 << 20, TasksMax: 20, CPUQuota: 0.5},
			wantEnforced:       []string{"memory", "tasks", "cpu"},
			wantFiles:          map[string]string{"memory.max": "67108864", "pids.max": "20", "cpu.max": "50000 100000"},
			wantSubtreeControl: "+cpu +memory +pids",
		},
		{
			name: "no cpu controller", own: "/", controllers: "memory pids",
			limits:             Limits{MemoryMax: 1 << 30, TasksMax: 64, CPUQuota: 1.5},
			wantEnforced:       []string{"memory", "tasks"},
			wantFiles:          map[string]string{"memory.max": "1073741824", "pids.max": "64"},
			wantSubtreeControl: "+memory +pids",
		},
		{
			name: "no limits still accounts memory and pids", own: "/", controllers: "cpu memory pids",
			wantFiles:          map[string]string{},
			wantSubtreeControl: "+memory +pids",
		},
		{
			name: "delegated service cgroup", own: "/system.slice/shelldon.service",
			controllers: "cpu memory pids", subtree: "memory pids", procs: "4242\n",
			limits: Limits{MemoryMax: 1 << 20, CPUQuota: 2},
			// cpu is offered but not enabled for children, and the cgroup
			// holds a process, so the kernel would refuse it.
			wantEnforced:       []string{"memory"},
			wantFiles:          map[string]string{"memory.max": "1048576"},
			wantSubtreeControl: "+memory +pids",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := v2Tree(t, tc.own, tc.controllers, tc.subtree, tc.procs)
			g, err := h.newGroup("run-1", tc.limits)
			if err != nil {
				t.Fatalf("New(%+v) = %v", tc.limits, err)
			}
			if got := g.Enforced(); !reflect.DeepEqual(got, tc.wantEnforced) {
				t.Errorf("Enforced() = %q, want %q", got, tc.wantEnforced)
			}
			dir := filepath.Join(h.root, tc.own, parentName, "run-1")
			if want := path.Join(tc.own, parentName, "run-1"); g.path != want {
				t.Errorf("group path = %q, want %q", g.path, want)
			}
			for file, want := range tc.wantFiles {
				if got := readLimit(t, filepath.Join(dir, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			for _, file := range []string{"memory.max", "pids.max", "cpu.max", "memory.swap.max"} {
				if _, ok := tc.wantFiles[file]; !ok {
					if _, err := os.Stat(filepath.Join(dir, file)); err == nil {
						t.Errorf("%s written, want no limit", file)
					}
				}
			}
			for _, parent := range []string{filepath.Join(h.root, tc.own), filepath.Join(h.root, tc.own, parentName)} {
				if got := readLimit(t, filepath.Join(parent, "cgroup.subtree_control")); got != tc.wantSubtreeControl {
					t.Errorf("%s/cgroup.subtree_control = %q, want %q", parent, got, tc.wantSubtreeControl)
				}
			}
			if g, err := h.newGroup("run-1", tc.limits); !errors.Is(err, fs.ErrExist) {
				t.Errorf("New of an existing group = %v, %v; want fs.ErrExist", g, err)
			}
		})
	}
}

func TestNewOnV1WritesLimits(t *testing.T) {
	for _, tc := range []struct {
		name         string
		files        map[string]string // the fake tree
		limits       Limits
		wantEnforced []string
		wantFiles    map[string]string // below root, in the group's directories
	}{
		{
			name: "every hierarchy, swap accounted",
			files: map[string]string{
				"memory/memory.memsw.limit_in_bytes": "", "pids/cgroup.procs": "",
				"cpu/cpu.cfs_quota_us": "-1", "cpuacct/cgroup.procs": "", "freezer/cgroup.procs": "",
			},
			limits:       Limits{MemoryMax: 64 << 20, TasksMax: 20, CPUQuota: 0.5},
			wantEnforced: []string{"memory", "swap", "tasks", "cpu"},
			wantFiles: map[string]string{
				"memory/own/shelldon/run-1/memory.limit_in_bytes":       "67108864",
				"memory/own/shelldon/run-1/memory.memsw.limit_in_bytes": "67108864",
				"pids/own/shelldon/run-1/pids.max":                      "20",
				"cpu/own/shelldon/run-1/cpu.cfs_period_us":              "100000",
				"cpu/own/shelldon/run-1/cpu.cfs_quota_us":               "50000",
			},
		},
		{
			name:         "no swap accounting, no cpu hierarchy",
			files:        map[string]string{"memory/cgroup.procs": "", "pids/cgroup.procs": ""},
			limits:       Limits{MemoryMax: 1 << 20, TasksMax: 5, CPUQuota: 1},
			wantEnforced: []string{"memory", "tasks"},
			wantFiles: map[string]string{
				"memory/own/shelldon/run-1/memory.limit_in_bytes": "1048576",
				"pids/own/shelldon/run-1/pids.max":                "5",
			},
		},
		{
			name:         "cpu hierarchy without CFS bandwidth control",
			files:        map[string]string{"memory/cgroup.procs": "", "pids/cgroup.procs": "", "cpu/cpu.shares": "1024"},
			limits:       Limits{TasksMax: 5, CPUQuota: 1},
			wantEnforced: []string{"tasks"},
			wantFiles:    map[string]string{"pids/own/shelldon/run-1/pids.max": "5"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakeHost(t, cgroups.Legacy, "/own")
			writeFiles(t, h.root, tc.files)
			g, err := h.newGroup("run-1", tc.limits)
			if err != nil {
				t.Fatalf("New(%+v) = %v", tc.limits, err)
			}
			if got := g.Enforced(); !reflect.DeepEqual(got, tc.wantEnforced) {
				t.Errorf("Enforced() = %q, want %q", got, tc.wantEnforced)
			}
			for file, want := range tc.wantFiles {
				if got := readLimit(t, filepath.Join(h.root, file)); got != want {
					t.Errorf("%s = %q, want %q", file, got, want)
				}
			}
			if g, err := h.newGroup("run-1", tc.limits); !errors.Is(err, fs.ErrExist) {
				t.Errorf("New of an existing group = %v, %v; want fs.ErrExist", g, err)
			}
		})
	}
}

func TestQuotaMicros(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		want int64
	}{{0.01, 1000}, {0.5, 50000}, {1, 100000}, {2.25, 225000}, {0.333333, 33333}} {
		if got := quotaMicros(Limits{CPUQuota: tc.cpus}); got != tc.want {
			t.Errorf("quotaMicros(%v) = %d, want %d", tc.cpus, got, tc.want)
		}
	}
}
