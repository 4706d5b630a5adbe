package hub_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"shelldon/contracts"
	"shelldon/daemon/hub"
)

// TestAccessAllow: who may connect, and who of them may take the roles
// that hear every prompt (the broker) or speak for the owner (a
// transport). Each refusal is a hole a caller would otherwise use.
func TestAccessAllow(t *testing.T) {
	const (
		self, group    = 1000, 500
		broker, sender = 991, 1001
		listed, nobody = 2000, 65534
		notBus         = "may not join the bus"
	)
	access := hub.Access{Self: self, Group: group, Connect: []int{listed}, Brokers: []int{broker}, Transports: []int{sender}}
	caller := func(uid int, groups ...int) hub.Caller { return hub.Caller{UID: uid, Groups: groups} }
	tests := []struct {
		access hub.Access
		caller hub.Caller
		role   contracts.Role
		want   string // "" to allow, else part of the reason
	}{
		// Root and core's own user take any role.
		{access, caller(0, 0), contracts.RoleBroker, ""},
		{access, caller(0, 0), contracts.RoleTransport, ""},
		{access, caller(0, 0), contracts.RolePanel, ""},
		{access, caller(0, 0), contracts.RoleWorker, ""},
		{access, caller(self, self), contracts.RoleBroker, ""},
		{access, caller(self, self), contracts.RoleTransport, ""},
		// The broker's user is the broker, and only that.
		{access, caller(broker, broker, group), contracts.RoleBroker, ""},
		{access, caller(broker, broker, group), contracts.RoleTransport, "uid 991 may not be a transport (list its user in bus.transport_users)"},
		{access, caller(broker, broker, group), contracts.RolePanel, ""},
		// A listed transport user is a transport, not the broker.
		{access, caller(sender, sender, group), contracts.RoleTransport, ""},
		{access, caller(sender, sender, group), contracts.RoleBroker, "uid 1001 may not be the broker (list its user in bus.broker_users)"},
		// Any other member of the socket's group (a worker's or the
		// panel's user) is a panel or a worker, never a broker or a
		// transport.
		{access, caller(nobody, nobody, group), contracts.RolePanel, ""},
		{access, caller(nobody, nobody, group), contracts.RoleWorker, ""},
		{access, caller(nobody, nobody, group), contracts.RoleBroker, "uid 65534 may not be the broker"},
		{access, caller(nobody, nobody, group), contracts.RoleTransport, "uid 65534 may not be a transport"},
		{access, caller(nobody, group), contracts.RolePanel, ""}, // the group as its primary one
		// bus.allowed_uids lets a user connect, and gives it no role.
		{access, caller(listed, listed), contracts.RolePanel, ""},
		{access, caller(listed, listed), contracts.RoleTransport, "uid 2000 may not be a transport"},
		// Outside the group and unlisted: nothing, whatever role lists
		// name the user.
		{access, caller(nobody, nobody), contracts.RolePanel, notBus},
		{access, caller(broker, broker), contracts.RoleBroker, notBus},
		{access, caller(sender), contracts.RoleTransport, notBus},
		// Root's group grants nothing of root's.
		{hub.Access{Self: self}, caller(nobody, 0), contracts.RolePanel, notBus},
		// Core's role is core's own, and unknown roles are nobody's.
		{access, caller(0, 0), contracts.RoleCore, `no caller may be "core"`},
		{access, caller(0, 0), "wizard", `no caller may be "wizard"`},
	}
	for _, tt := range tests {
		err := tt.access.Allow(tt.caller, tt.role)
		if refused := err != nil; refused != (tt.want != "") || refused && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Allow(%+v, %s) = %v, want %v", tt.caller, tt.role, err, wantText(tt.want))
		}
	}
}

func wantText(reason string) string {
	if reason == "" {
		return "nil"
	}
	return fmt.Sprintf("a refusal containing %q", reason)
}

// TestLookupUIDs: names become uids by the host's user database, numbers
// are taken as they are, and a name the host lacks is skipped with one
// log line rather than stopping core.
func TestLookupUIDs(t *testing.T) {
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	got := hub.LookupUIDs("bus.broker_users", []string{"root", "991", "no-such-user-here", "0"}, logf)
	if want := []int{0, 991, 0}; !slices.Equal(got, want) {
		t.Errorf("LookupUIDs = %v, want %v", got, want)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `bus.broker_users: user "no-such-user-here" skipped`) {
		t.Errorf("LookupUIDs logged %q, want one line naming the list and the skipped user", lines)
	}
}
