package vm

import "testing"

func TestDecideAccelerator(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    string
		opens  bool
		cached string
		probed string // the probe's verdict; "" fails the test if it runs
		want   string
	}{
		{"forced off", "0", true, kvmWorks, "", "tcg"},
		{"no /dev/kvm", "", false, "", "", "tcg"},
		{"asked for but no /dev/kvm", "1", false, "", "", "tcg"},
		{"asked for", "1", true, kvmHangs, "", "kvm"},
		{"kept: works", "", true, kvmWorks, "", "kvm"},
		{"kept: hangs", "", true, kvmHangs, "", "tcg"},
		{"probed: works", "", true, "", kvmWorks, "kvm"},
		{"probed: hangs", "", true, "", kvmHangs, "tcg"},
		{"a garbled verdict is probed again", "", true, "wo", kvmWorks, "kvm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := func() string {
				if tc.probed == "" {
					t.Errorf("probed, though %s settles it", tc.name)
				}
				return tc.probed
			}
			got := decideAccelerator(tc.env, tc.opens, tc.cached, probe)
			if got.name != tc.want || got.why == "" {
				t.Errorf("decideAccelerator(%q, %v, %q) = %+v, want %s and a reason", tc.env, tc.opens, tc.cached, got, tc.want)
			}
		})
	}
}
