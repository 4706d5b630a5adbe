package systemdhost

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"golang.org/x/sys/unix"

	"shelldon/testhost"
)

// TestBootRunsATransientService boots the test host, talks to its systemd
// from the host over the shared bus socket and has it run a service.
func TestBootRunsATransientService(t *testing.T) {
	h := Boot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := Connect(ctx, h.BusAddress)
	if err != nil {
		t.Fatalf("Connect(%q): %v", h.BusAddress, err)
	}
	defer conn.Close()

	units, err := conn.ListUnitsContext(ctx)
	if err != nil {
		t.Fatalf("ListUnits: %v", err)
	}
	if !hasUnit(units, "dbus.service", "active") {
		t.Errorf("ListUnits has no active dbus.service: %v", units)
	}

	const unit = "systemdhost-sleep.service"
	done := make(chan string, 1)
	started := time.Now()
	// Type=exec: the start job is done once sleep runs, not once systemd
	// has forked the process that will exec it.
	props := []sddbus.Property{sddbus.PropDescription("sleep for the test"), sddbus.PropType("exec"), sddbus.PropExecStart([]string{"/bin/sleep", "600"}, true)}
	if _, err := conn.StartTransientUnitContext(ctx, unit, "fail", props, done); err != nil {
		t.Fatalf("StartTransientUnit(%s): %v", unit, err)
	}
	select {
	case result := <-done:
		if result != "done" {
			t.Fatalf("start job of %s ended %q, want done", unit, result)
		}
	case <-ctx.Done():
		t.Fatalf("start job of %s: %v", unit, ctx.Err())
	}
	t.Logf("StartTransientUnit took %s", time.Since(started).Round(time.Microsecond))

	out, err := h.Exec(ctx, "systemctl", "is-active", unit)
	if err != nil || strings.TrimSpace(string(out)) != "active" {
		t.Errorf("systemctl is-active %s in the container = %q, %v; want active", unit, out, err)
	}
	out, err = h.Exec(ctx, "/bin/sh", "-c", "cat /proc/$(systemctl show -P MainPID "+unit+")/comm")
	if err != nil || strings.TrimSpace(string(out)) != "sleep" {
		t.Errorf("the main process of %s in the container is %q, %v; want sleep", unit, out, err)
	}
}

func TestExecReportsFailure(t *testing.T) {
	h := Boot(t)
	if _, err := h.Exec(context.Background(), "/bin/false"); err == nil {
		t.Errorf("Exec(/bin/false) = nil error, want one")
	}
}

func hasUnit(units []sddbus.UnitStatus, name, active string) bool {
	for _, u := range units {
		if u.Name == name && u.ActiveState == active {
			return true
		}
	}
	return false
}

// TestAHostWhoseNspawnWasKilledIsStillPoweredOff: a killed
// systemd-nspawn leaves its container running, reparented to the
// machine's init; the test's cleanup must end it all the same, or a pet
// booted in it runs on after the test (seen after a CI run).
func TestAHostWhoseNspawnWasKilledIsStillPoweredOff(t *testing.T) {
	var leader int
	t.Run("boot", func(t *testing.T) {
		h := Boot(t)
		leader = h.Leader
		nspawn := parentOf(t, leader)
		if err := unix.Kill(nspawn, unix.SIGKILL); err != nil {
			t.Fatalf("kill systemd-nspawn (pid %d): %v", nspawn, err)
		}
		for deadline := time.Now().Add(10 * time.Second); parentOf(t, leader) == nspawn; time.Sleep(pollInterval) {
			if time.Now().After(deadline) {
				t.Fatalf("the container's systemd (pid %d) is still systemd-nspawn's child 10 s after its kill", leader)
			}
		}
	}) // the subtest's cleanup powers the host off
	if alive(leader) && innermostPid(leader) == 1 {
		unix.Kill(leader, unix.SIGKILL) // not left behind by this test either
		t.Errorf("the container's systemd (pid %d) still runs after the test host's cleanup", leader)
	}
}

// parentOf is pid's parent, from /proc.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	_, fields, err := testhost.ProcStat(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("/proc/%d/stat: parent %q: %v", pid, fields[1], err)
	}
	return ppid
}
