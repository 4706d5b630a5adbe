package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGuestHasCgroupV2AndOnlyForwardedNetwork boots a guest and checks
// what the VM is for: systemd as PID 1 on cgroup v2 whose memory limits
// really OOM-kill, files in and out, and a network that reaches the
// test's own server through the forward and nothing else.
func TestGuestHasCgroupV2AndOnlyForwardedNetwork(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from the host %s", r.URL.Path)
	}))
	defer srv.Close()
	hostPort := srv.Listener.Addr().(*net.TCPAddr).Port
	v := Boot(t, Options{Forward: map[int]int{8080: hostPort}})

	t.Run("cgroup v2", func(t *testing.T) {
		if got := strings.TrimSpace(v.Must(t, "stat", "-fc", "%T", "/sys/fs/cgroup")); got != "cgroup2fs" {
			t.Errorf("/sys/fs/cgroup is %q, want cgroup2fs", got)
		}
		controllers := strings.Fields(v.Must(t, "cat", "/sys/fs/cgroup/cgroup.controllers"))
		if !slices.Contains(controllers, "memory") {
			t.Errorf("cgroup.controllers = %v, want memory among them", controllers)
		}
	})

	t.Run("systemd is PID 1 and running", func(t *testing.T) {
		if got := strings.TrimSpace(v.Must(t, "readlink", "/proc/1/exe")); got != "/usr/lib/systemd/systemd" {
			t.Errorf("PID 1 is %q, want /usr/lib/systemd/systemd", got)
		}
		out, err := v.Exec(context.Background(), "systemctl", "is-system-running")
		if got := strings.TrimSpace(string(out)); got != "running" {
			failed, _ := v.Exec(context.Background(), "systemctl", "--failed", "--no-legend")
			t.Errorf("systemctl is-system-running = %q (%v), want running; failed units:\n%s", got, err, failed)
		}
	})

	t.Run("memory limit OOM-kills", func(t *testing.T) {
		const allocate64MB = "b = bytearray(64 << 20)"
		tests := []struct {
			limit, want string
		}{
			{"32M", "oom-kill"},
			{"256M", "success"}, // the same program fits a larger limit: it is the limit that kills
		}
		for _, tt := range tests {
			unit := "vm-test-alloc-" + tt.limit + ".service"
			out, err := v.Exec(context.Background(), "systemd-run", "--unit="+unit, "-p", "MemoryMax="+tt.limit, "-p", "MemorySwapMax=0", "--wait", "python3", "-c", allocate64MB)
			if tt.want == "success" && err != nil {
				t.Errorf("64 MB under MemoryMax=%s: %v", tt.limit, err)
			}
			if tt.want != "success" && err == nil {
				t.Errorf("64 MB under MemoryMax=%s succeeded:\n%s", tt.limit, out)
			}
			if got := strings.TrimSpace(v.Must(t, "systemctl", "show", "-P", "Result", unit)); got != tt.want {
				t.Errorf("Result of %s (MemoryMax=%s) = %q, want %q\n%s", unit, tt.limit, got, tt.want, out)
			}
		}
	})

	t.Run("files round trip", func(t *testing.T) {
		ctx := context.Background()
		const path = "/root/a file's $name"
		data := []byte("line one\n\x00binary\xff 'quoted' \"double\" $HOME `date`\n")
		if err := v.WriteFile(ctx, path, data, 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := v.ReadFile(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("ReadFile(%q) = %q, want %q", path, got, data)
		}
		if mode := strings.TrimSpace(v.Must(t, "stat", "-c", "%a", path)); mode != "640" {
			t.Errorf("mode of %q = %s, want 640", path, mode)
		}
		if _, err := v.ReadFile(ctx, "/no/such/file"); err == nil {
			t.Error("ReadFile(/no/such/file) = nil error, want one")
		}
	})

	t.Run("forward reaches the host's server", func(t *testing.T) {
		// Twice, because each guest connection must get its own.
		const fetch = "import sys, urllib.request\nfor url in sys.argv[1:]: print(urllib.request.urlopen(url, timeout=20).read().decode())"
		base := "http://" + ForwardAddress + ":8080"
		out := v.Must(t, "python3", "-c", fetch, base+"/one", base+"/two")
		if want := "hello from the host /one\nhello from the host /two\n"; out != want {
			t.Errorf("the guest fetched %q through the forward, want %q", out, want)
		}
	})

	t.Run("nothing else is reachable", func(t *testing.T) {
		// Prints how the connection ended and how long it took.
		const dial = `import socket, sys, time
start = time.monotonic()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
    result = "connected"
except OSError as e:
    result = type(e).__name__
print(result, round(time.monotonic() - start, 2))`
		for _, target := range []struct{ host, port string }{
			{"1.1.1.1", "80"},                    // the internet
			{"10.0.2.2", strconv.Itoa(hostPort)}, // the host, past the forward
			{ForwardAddress, "8081"},             // a port nobody forwarded
		} {
			out := strings.Fields(v.Must(t, "python3", "-c", dial, target.host, target.port))
			if len(out) != 2 || out[0] == "connected" {
				t.Errorf("the guest dialling %s:%s: %v, want a failure", target.host, target.port, out)
				continue
			}
			if seconds, err := strconv.ParseFloat(out[1], 64); err != nil || seconds > 5 {
				t.Errorf("the guest dialling %s:%s failed only after %s s (%s), want at once", target.host, target.port, out[1], out[0])
			}
			t.Logf("dialling %s:%s from the guest: %s after %s s", target.host, target.port, out[0], out[1])
		}
	})

	// The fault CI met once: a guest that stops answering for the rest
	// of the test (qemu pauses a VM whose disk write the host cannot
	// store). What the test then reports must name it.
	t.Run("a paused guest is named as paused", func(t *testing.T) {
		if _, err := v.monitor("stop"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, err := v.Exec(ctx, "true"); err == nil {
			t.Errorf("a command in a paused guest succeeded: %q", out)
		}
		report := v.diagnose()
		for _, want := range []string{"qemu's monitor: VM status: paused", "MiB free on the file system of " + v.Disk, "qemu's threads", "ssh master connection: up"} {
			if !strings.Contains(report, want) {
				t.Errorf("the diagnosis of a paused guest lacks %q:\n%s", want, report)
			}
		}
		if _, err := v.monitor("cont"); err != nil {
			t.Fatal(err)
		}
		v.Must(t, "true") // and the guest goes on
	})
}

// TestGuestBootsWithTheDebInstalled boots a guest with the release .deb
// installed into its root: the package is there, its users made, its
// units known (and left disabled until the owner configures the pet).
func TestGuestBootsWithTheDebInstalled(t *testing.T) {
	Require(t, "amd64") // before the slow build
	deb := BuildDeb(t, "amd64")
	v := Boot(t, Options{Debs: []string{deb}})
	if got := v.Must(t, "dpkg-query", "-W", "-f", "${Status}", "shelldon"); got != "install ok installed" {
		t.Errorf("dpkg says shelldon is %q", got)
	}
	v.Must(t, "id", "shelldon-worker")
	for _, unit := range []string{"shelldon.service", "shelldon-broker.service", "shelldon-panel.service"} {
		if out, _ := v.Exec(context.Background(), "systemctl", "is-enabled", unit); strings.TrimSpace(string(out)) != "disabled" {
			t.Errorf("systemctl is-enabled %s = %q, want disabled", unit, out)
		}
	}
	if out := strings.TrimSpace(v.Must(t, "shelldon", "version")); out == "" {
		t.Error("shelldon version printed nothing")
	} else {
		t.Logf("shelldon version in the guest: %s", out)
	}
}

func TestExecWithoutCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := (&VM{}).Exec(ctx); !errors.Is(err, ErrNoCommand) {
		t.Errorf("Exec() with no command = %v, want %v", err, ErrNoCommand)
	}
}

// TestMachinesByArchitecture: the architecture decides the qemu, the
// board and CPU, and the console the kernel writes to.
func TestMachinesByArchitecture(t *testing.T) {
	v := &VM{Disk: "/d/disk.img", Console: "/d/console.log", SSHPort: 2222}
	for _, tc := range []struct {
		arch, qemu, console string
		flags               string // in the order qemu gets them; "" for none
	}{
		{"", "qemu-system-x86_64", "console=ttyS0", ""},
		{"amd64", "qemu-system-x86_64", "console=ttyS0", ""},
		{"arm64", "qemu-system-aarch64", "console=ttyAMA0", "-M virt -cpu cortex-a53"},
	} {
		m, err := machineFor(tc.arch)
		if err != nil {
			t.Fatalf("machineFor(%q) = %v", tc.arch, err)
		}
		args := strings.Join(qemuArgs(Options{Arch: tc.arch}, m, v, "tcg", "/k", "/i", ""), " ")
		// The console ends the kernel's command line, which the disk follows.
		if m.qemu != tc.qemu || !strings.Contains(args, tc.console+" -drive ") {
			t.Errorf("%q: %s %s; want %s with %s", tc.arch, m.qemu, args, tc.qemu, tc.console)
		}
		if tc.flags != "" && !strings.Contains(args, "-accel tcg "+tc.flags+" ") {
			t.Errorf("%q: %s; want %s after the accelerator", tc.arch, args, tc.flags)
		}
		if tc.flags == "" && strings.Contains(args, " -M ") {
			t.Errorf("%q: %s; want qemu's default machine", tc.arch, args)
		}
	}
	if _, err := machineFor("armhf"); err == nil || !strings.Contains(err.Error(), "want amd64 or arm64") {
		t.Errorf("machineFor(armhf) = %v, want an error naming the architectures there are", err)
	}
}
