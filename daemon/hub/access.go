package hub

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"shelldon/contracts"
)

// Access binds the bus's roles to users: which callers may connect at all,
// and which of them may claim a role that speaks for the owner (a
// transport) or hears every prompt (the broker). Root and core's own user
// may take any role. A panel may send nothing and a worker must still
// prove its turn ([Config.VerifyWorker]), so any caller that may connect
// may claim those two.
type Access struct {
	// Self is core's own uid and Group the socket's group, whose members
	// may connect; Listen sets both. A Group of 0 admits nobody: root's
	// group is not a grant of root's.
	Self, Group int
	// Connect lists more users who may connect (bus.allowed_uids).
	Connect []int
	// Brokers may be the broker (bus.broker_users), Transports a
	// transport (bus.transport_users), besides root and Self.
	Brokers, Transports []int
}

// Caller is a connecting peer as the kernel describes it.
type Caller struct {
	UID int
	// Groups are its primary group and its supplementary ones.
	Groups []int
}

// Allow reports whether c may join the bus as role; the error is the
// reason, for the caller and the log.
func (a Access) Allow(c Caller, role contracts.Role) error {
	owner := c.UID == 0 || c.UID == a.Self
	if !owner && !slices.Contains(a.Connect, c.UID) && (a.Group == 0 || !slices.Contains(c.Groups, a.Group)) {
		return fmt.Errorf("uid %d may not join the bus (add the user to the state directory's group, or list it in bus.allowed_uids)", c.UID)
	}
	switch role {
	case contracts.RolePanel, contracts.RoleWorker:
		return nil
	case contracts.RoleBroker:
		if !owner && !slices.Contains(a.Brokers, c.UID) {
			return fmt.Errorf("uid %d may not be the broker (list its user in bus.broker_users)", c.UID)
		}
		return nil
	case contracts.RoleTransport:
		if !owner && !slices.Contains(a.Transports, c.UID) {
			return fmt.Errorf("uid %d may not be a transport (list its user in bus.transport_users)", c.UID)
		}
		return nil
	}
	return fmt.Errorf("no caller may be %q", role)
}

// callerOf describes the peer of cred. Its supplementary groups come from
// /proc, which SO_PEERCRED does not give; when they cannot be read (the
// caller has already gone) it counts with its primary group alone.
func callerOf(cred Cred) (Caller, error) {
	c := Caller{UID: cred.UID, Groups: []int{cred.GID}}
	groups, err := supplementaryGroups(cred.PID)
	c.Groups = append(c.Groups, groups...)
	return c, err
}

// supplementaryGroups reads a process's supplementary groups from /proc.
func supplementaryGroups(pid int) ([]int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("read the groups of pid %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
			var groups []int
			for _, f := range strings.Fields(rest) {
				if g, err := strconv.Atoi(f); err == nil {
					groups = append(groups, g)
				}
			}
			return groups, nil
		}
	}
	return nil, fmt.Errorf("read the groups of pid %d: no Groups line in /proc/%d/status", pid, pid)
}

// LookupUIDs resolves the users a configuration list names (what, such
// as "bus.broker_users") to uids, once at start: a name by this host's
// user database, a number as it is. A name the host does not know is
// skipped with a line to logf, not an error: a board set up without one
// of the pet's users still runs, that user's role left to root and core.
func LookupUIDs(what string, users []string, logf func(format string, args ...any)) []int {
	var uids []int
	for _, name := range users {
		if uid, err := strconv.Atoi(name); err == nil {
			uids = append(uids, uid)
			continue
		}
		u, err := user.Lookup(name)
		var uid int
		if err == nil {
			uid, err = strconv.Atoi(u.Uid)
		}
		if err != nil {
			logf("bus: %s: user %q skipped: %v", what, name, err)
			continue
		}
		uids = append(uids, uid)
	}
	return uids
}
