package procmem

import (
	"os"
	"path/filepath"
	"shelldon/testhost"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeProc points the readers at files under a temporary directory.
func fakeProc(t *testing.T) string {
	dir := t.TempDir()
	saved := []string{selfStatus, selfStatm, meminfo, selfCgroup, cgroupRoot}
	selfStatus, selfStatm, meminfo = filepath.Join(dir, "status"), filepath.Join(dir, "statm"), filepath.Join(dir, "meminfo")
	selfCgroup, cgroupRoot = filepath.Join(dir, "cgroup"), filepath.Join(dir, "sys")
	forgetCgroup()
	t.Cleanup(func() {
		selfStatus, selfStatm, meminfo, selfCgroup, cgroupRoot = saved[0], saved[1], saved[2], saved[3], saved[4]
		forgetCgroup()
	})
	return dir
}

func TestSelf(t *testing.T) {
	dir := fakeProc(t)
	write(t, filepath.Join(dir, "status"), "Name:\tshelldon\nVmHWM:\t   2048 kB\nVmRSS:\t1024 kB\nVmBad:\tlots kB\n")
	tests := []struct {
		field string
		want  int64
		ok    bool
	}{
		{"VmRSS", 1 << 20, true},
		{"VmHWM", 2 << 20, true},
		{"VmBad", 0, false},
		{"VmSwap", 0, false},
	}
	for _, tt := range tests {
		if got, ok := Self(tt.field); got != tt.want || ok != tt.ok {
			t.Errorf("Self(%q) = %d, %v; want %d, %v", tt.field, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSelfReadsTheRealKernel(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		testhost.Missing(t, "/proc ("+err.Error()+")", "mount procfs at /proc")
	}
	if rss, ok := Self("VmRSS"); !ok || rss <= 0 {
		t.Errorf("Self(VmRSS) = %d, %v on this machine; want a positive size", rss, ok)
	}
	if total, avail, ok := Machine(); !ok || total <= 0 || avail > total {
		t.Errorf("Machine() = %d, %d, %v; want 0 < available <= total", total, avail, ok)
	}
}

// forgetCgroup drops the cgroup Cgroup read, for a test that changes it.
func forgetCgroup() {
	own.Lock()
	defer own.Unlock()
	own.read, own.dir = false, ""
}

// TestResidentAgreesWithStatus: statm gives what /proc/self/status says
// as VmRSS, within what this test's own running may move it.
func TestResidentAgreesWithStatus(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		testhost.Missing(t, "/proc ("+err.Error()+")", "mount procfs at /proc")
	}
	const slack = 1 << 20
	got, ok := Resident()
	want, _ := Self("VmRSS")
	if !ok || got <= 0 || got < want-slack || got > want+slack {
		t.Errorf("Resident() = %d, %v; /proc/self/status says VmRSS %d", got, ok, want)
	}
}

// TestResidentReadsStatm: the second of statm's numbers, in pages.
func TestResidentReadsStatm(t *testing.T) {
	dir := fakeProc(t)
	for _, tt := range []struct {
		statm string
		want  int64
		ok    bool
	}{
		{"1000 300 200 10 0 500 0\n", 300 * int64(os.Getpagesize()), true},
		{"1000\n", 0, false},
		{"1000 many\n", 0, false},
	} {
		write(t, filepath.Join(dir, "statm"), tt.statm)
		if got, ok := Resident(); got != tt.want || ok != tt.ok {
			t.Errorf("Resident() of %q = %d, %v; want %d, %v", tt.statm, got, ok, tt.want, tt.ok)
		}
	}
}

// TestCgroupIsReadOnce: the process's cgroup is read from /proc once; its
// memory at every ask.
func TestCgroupIsReadOnce(t *testing.T) {
	dir := fakeProc(t)
	write(t, filepath.Join(dir, "cgroup"), "0::/shelldon.slice/shelldon.service\n")
	write(t, filepath.Join(dir, "sys/shelldon.slice/shelldon.service/memory.current"), "4096\n")
	if current, _, ok := Cgroup(); current != 4096 || !ok {
		t.Fatalf("Cgroup() = %d, %v; want 4096, true", current, ok)
	}
	os.Remove(filepath.Join(dir, "cgroup"))
	write(t, filepath.Join(dir, "sys/shelldon.slice/shelldon.service/memory.current"), "8192\n")
	if current, _, ok := Cgroup(); current != 8192 || !ok {
		t.Errorf("Cgroup() after its cgroup file went = %d, %v; want 8192, true from the cgroup read before", current, ok)
	}
}

func TestMachine(t *testing.T) {
	dir := fakeProc(t)
	if _, _, ok := Machine(); ok {
		t.Error("Machine() with no meminfo reported ok")
	}
	write(t, filepath.Join(dir, "meminfo"), "MemTotal:       425984 kB\nMemFree:        1000 kB\nMemAvailable:   212992 kB\n")
	total, avail, ok := Machine()
	if total != 425984<<10 || avail != 212992<<10 || !ok {
		t.Errorf("Machine() = %d, %d, %v", total, avail, ok)
	}
}

func TestCgroup(t *testing.T) {
	dir := fakeProc(t)
	tests := []struct {
		name           string
		cgroup         string
		files          map[string]string
		current, limit int64
		ok             bool
	}{
		{"no cgroup file", "", nil, 0, 0, false},
		{"v1 only", "4:memory:/x\n", nil, 0, 0, false},
		{"limited", "0::/shelldon.slice/shelldon.service\n", map[string]string{
			"shelldon.slice/shelldon.service/memory.current": "1048576\n",
			"shelldon.slice/shelldon.service/memory.max":     "419430400\n",
		}, 1 << 20, 400 << 20, true},
		{"unlimited", "0::/user.slice\n", map[string]string{
			"user.slice/memory.current": "4096\n", "user.slice/memory.max": "max\n",
		}, 4096, 0, true},
		{"no memory controller", "0::/other\n", nil, 0, 0, false},
		{"escaping path stays under the root", "0::/../../etc\n", map[string]string{"etc/memory.current": "1\n"}, 1, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(dir, "sys"))
			os.Remove(filepath.Join(dir, "cgroup"))
			forgetCgroup()
			if tt.cgroup != "" {
				write(t, filepath.Join(dir, "cgroup"), tt.cgroup)
			}
			for p, c := range tt.files {
				write(t, filepath.Join(dir, "sys", p), c)
			}
			current, limit, ok := Cgroup()
			if current != tt.current || limit != tt.limit || ok != tt.ok {
				t.Errorf("Cgroup() = %d, %d, %v; want %d, %d, %v", current, limit, ok, tt.current, tt.limit, tt.ok)
			}
		})
	}
}

func TestPeak(t *testing.T) {
	dir := fakeProc(t)
	write(t, filepath.Join(dir, "sys", "shelldon.slice/shelldon-turns.slice/shelldon-run@t1-1.service/memory.peak"), "9437184\n")
	write(t, filepath.Join(dir, "sys", "etc/memory.peak"), "1\n")
	for _, tt := range []struct {
		cgroup string
		want   int64
		ok     bool
	}{
		{"/shelldon.slice/shelldon-turns.slice/shelldon-run@t1-1.service", 9 << 20, true},
		{"/shelldon.slice/gone.service", 0, false},
		{"", 0, false},
		{"/../../etc", 1, true}, // stays under the root
	} {
		if got, ok := Peak(tt.cgroup); got != tt.want || ok != tt.ok {
			t.Errorf("Peak(%q) = %d, %v; want %d, %v", tt.cgroup, got, ok, tt.want, tt.ok)
		}
	}
}
