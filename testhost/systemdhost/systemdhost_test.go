package systemdhost

import (
	"context"
	"strings"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
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
