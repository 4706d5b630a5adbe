package launch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/testhost/systemdhost"
)

func TestOwnsCgroup(t *testing.T) {
	const unit = "shelldon-turn@t1.service"
	for _, tc := range []struct {
		name, cgroup string
		want         bool
	}{
		{"v2 on the host", "0::/shelldon.slice/shelldon-turns.slice/shelldon-turn@t1.service\n", true},
		{"hybrid inside a container", "9:name=systemd:/payload/shelldon.slice/shelldon-turns.slice/shelldon-turn@t1.service\n4:memory:/\n0::/\n", true},
		{"below the unit", "0::/shelldon.slice/shelldon-turns.slice/shelldon-turn@t1.service/sub\n", true},
		{"another turn", "0::/shelldon.slice/shelldon-turns.slice/shelldon-turn@t10.service\n", false},
		{"same name in another slice", "0::/system.slice/shelldon-turn@t1.service\n", false},
		{"core itself", "0::/shelldon.slice/shelldon.service\n", false},
		{"empty", "", false},
		{"garbage", "::::\n\x00\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownsCgroup(tc.cgroup, unit); got != tc.want {
				t.Errorf("ownsCgroup(%q, %s) = %v, want %v", tc.cgroup, unit, got, tc.want)
			}
		})
	}
}

// TestUnitMemoryBound: with a cgroup limit the unit leaves RLIMIT_DATA
// out, so a growing worker meets the kernel's OOM killer (and its turn
// is recorded as oom-kill) rather than the Go runtime's mmap failure.
func TestUnitMemoryBound(t *testing.T) {
	for _, tc := range []struct {
		name              string
		limits            Limits
		wantData, wantMax bool
	}{
		{"cgroup and rlimit asked", Limits{Data: 256 << 20, Memory: 256 << 20}, false, true},
		{"rlimit only", Limits{Data: 256 << 20}, true, false},
		{"neither", Limits{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotData, gotMax bool
			for _, p := range (&Systemd{}).properties(Spec{Argv: []string{"/bin/true"}, Limits: tc.limits}) {
				gotData = gotData || p.Name == "LimitDATA"
				gotMax = gotMax || p.Name == "MemoryMax"
			}
			if gotData != tc.wantData || gotMax != tc.wantMax {
				t.Errorf("properties(%+v): LimitDATA %v, MemoryMax %v; want %v, %v", tc.limits, gotData, gotMax, tc.wantData, tc.wantMax)
			}
		})
	}
}

func TestSystemdRefusesBadSpecs(t *testing.T) {
	s := &Systemd{}
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"no command", Spec{Turn: "t1", Reap: time.Second}},
		{"no reap deadline", Spec{Turn: "t1", Argv: []string{"/bin/true"}}},
		{"turn with a slash", Spec{Turn: "../x", Argv: []string{"/bin/true"}, Reap: time.Second}},
		{"turn with a space", Spec{Turn: "a b", Argv: []string{"/bin/true"}, Reap: time.Second}},
		{"empty turn", Spec{Turn: "", Argv: []string{"/bin/true"}, Reap: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := s.Start(context.Background(), tc.spec); err == nil {
				t.Errorf("Start(%+v) = %v, nil; want an error", tc.spec, h)
			}
		})
	}
}

func TestValidInstance(t *testing.T) {
	for id, want := range map[string]bool{
		"f78f9a2ff06ce18c": true, "a.b_c:d-e": true, strings.Repeat("x", 200): true,
		"": false, strings.Repeat("x", 201): false, "a b": false, "../x": false, "a\\x2d": false, "é": false, "a@b": false,
	} {
		if got := validInstance(id); got != want {
			t.Errorf("validInstance(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestNewSystemdWithoutSystemd(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		dial func() (*godbus.Conn, error)
	}{
		{"dial fails", func() (*godbus.Conn, error) { return nil, errors.New("no bus") }},
		{"no socket", func() (*godbus.Conn, error) { return systemdhost.Dial("unix:path=" + dir + "/none") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSystemd(context.Background(), tc.dial, SystemdOptions{})
			if !errors.Is(err, ErrNoSystemd) {
				t.Errorf("NewSystemd = %v, %v; want an error wrapping ErrNoSystemd", s, err)
			}
		})
	}
}
