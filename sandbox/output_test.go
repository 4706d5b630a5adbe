package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestResultText(t *testing.T) {
	cases := []struct {
		name   string
		res    Result
		prefix string
	}{
		{"plain", Result{Output: []byte("fine\n")}, "fine"},
		{"invalid UTF-8", Result{Output: []byte("a\xffb")}, "a\uFFFDb"},
		{"cut", Result{Output: []byte("tail"), OutputDropped: 42}, "[… 42 earlier bytes of output cut …]\ntail"},
		{"cut mid-rune", Result{Output: []byte("\xa9 end"), OutputDropped: 1}, "[… 1 earlier bytes of output cut …]\n\uFFFD end"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.res.Text()
			if !utf8.ValidString(got) || !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("Text() = %q, want valid UTF-8 starting %q", got, tc.prefix)
			}
		})
	}
}

func TestSpecWorkdir(t *testing.T) {
	for dir, want := range map[string]string{"": "/workspace", "sub": "/workspace/sub", "a/./b/": "/workspace/a/b"} {
		if got := (Spec{Dir: dir}).workdir(); got != want {
			t.Errorf("Spec{Dir: %q}.workdir() = %q, want %q", dir, got, want)
		}
	}
}

func TestNspawnArgs(t *testing.T) {
	spec := Spec{Argv: []string{"python3", "-c", "print(1)"}, Env: []string{"A=b"}}
	base := container{workspace: "/r/merged", tmp: "/r/tmp", varTmp: "/r/var-tmp"}
	unprivileged, writable, networked := base, base, base
	unprivileged.owner = owner{uid: 1000, gid: 1000}
	writable.writable = true
	networked.netns, networked.env = os.Stdin, []string{"ALL_PROXY=socks5h://127.0.0.1:1080"}
	cases := []struct {
		name    string
		spec    Spec
		c       container
		want    []string
		notWant []string
	}{
		{"read-only as root", spec, base,
			[]string{"--bind-ro=/r/merged:/workspace", "--private-network", "--read-only", "--drop-capability=all", "--setenv=A=b", "--setenv=HOME=/tmp",
				"--bind=/r/tmp:/tmp", "--bind=/r/var-tmp:/var/tmp", "--bind-ro=/dev/null:/proc/cmdline", "--resolv-conf=off"},
			[]string{"--private-users=0:1", "--bind=/r/merged:/workspace"}},
		{"unprivileged owner", spec, unprivileged,
			[]string{"--private-users=1000:1", "--private-users-ownership=map"},
			nil},
		{"writable", spec, writable,
			[]string{"--bind=/r/merged:/workspace"},
			[]string{"--bind-ro=/r/merged:/workspace"}},
		{"network", Spec{Argv: []string{"git", "fetch"}, Network: true}, networked,
			[]string{"--setenv=ALL_PROXY=socks5h://127.0.0.1:1080", "--resolv-conf=off"},
			[]string{"--private-network", "--resolv-conf=bind-host"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := nspawnArgs("/img", tc.spec, tc.c)
			joined := "\n" + strings.Join(args, "\n") + "\n"
			for _, w := range tc.want {
				if !strings.Contains(joined, "\n"+w+"\n") {
					t.Errorf("nspawnArgs lacks %q: %q", w, args)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(joined, "\n"+w+"\n") {
					t.Errorf("nspawnArgs has %q: %q", w, args)
				}
			}
			tail := args[len(args)-len(tc.spec.Argv)-2:]
			if !slices.Equal(tail, append([]string{"--as-pid2", "--"}, tc.spec.Argv...)) {
				t.Errorf("nspawnArgs ends %q, want --as-pid2 -- and the command", tail)
			}
		})
	}
}
