package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/daemon/launch"
	"shelldon/testhost"
)

// TestMain lets the test binary act as a bus client of another user: with
// SHELLDON_TEST_DIAL set to a socket, it joins in the role
// SHELLDON_TEST_ROLE names and exits 0 when welcomed, 3 when refused, 4
// when it could not connect at all.
func TestMain(m *testing.M) {
	if socket := os.Getenv("SHELLDON_TEST_DIAL"); socket != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		role := contracts.Role(os.Getenv("SHELLDON_TEST_ROLE"))
		conn, err := bus.Dial(ctx, socket, contracts.Hello{Role: role, Name: "stranger"}, 0)
		switch {
		case err == nil:
			conn.Close()
			os.Exit(0)
		case errors.Is(err, bus.ErrRefused):
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		default:
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	}
	os.Exit(m.Run())
}

// TestOnlyTrustedUsersJoin runs a bus client as another user: a member
// of the state directory's group joins as a panel, but may not claim the
// broker's or a transport's role, which the default configuration leaves
// to root, core's own user and the broker's; a user the socket's mode lets
// in only through root's group is still refused by core.
func TestOnlyTrustedUsersJoin(t *testing.T) {
	testhost.Root(t)
	const nobody, stateGroup = 65534, 4242
	idle := inProcessLauncher{work: func(context.Context, launch.Spec) {}}
	self := testhost.SelfForOthers(t)
	member := syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{stateGroup}}
	for _, tc := range []struct {
		name     string
		dirGroup uint32
		cred     syscall.Credential
		role     contracts.Role
		want     int
	}{
		{"member of the state group as a panel", stateGroup, member, contracts.RolePanel, 0},
		{"member of the state group as a transport", stateGroup, member, contracts.RoleTransport, 3},
		{"member of the state group as the broker", stateGroup, member, contracts.RoleBroker, 3},
		{"in root's group only", 0, syscall.Credential{Uid: nobody, Gid: 0}, contracts.RolePanel, 3},
		{"no group at all", stateGroup, syscall.Credential{Uid: nobody, Gid: nobody}, contracts.RolePanel, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startCoreIn(t, idle, time.Second, func(dir string) {
				// The client must reach the socket; the socket's own mode
				// and group are what is being tested.
				if err := os.Chown(dir, 0, int(tc.dirGroup)); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			})
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), "SHELLDON_TEST_DIAL="+h.cfg.Socket, "SHELLDON_TEST_ROLE="+string(tc.role))
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &tc.cred}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("run the client as %+v: %v", tc.cred, err)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("client as %+v, %s: exit %d (%s), want %d", tc.cred, tc.role, got, out, tc.want)
			}
		})
	}
}
