package image

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/testhost"
)

const goodRecipe = `# a comment
suite = bookworm
variant = minbase
packages = python3 git
verify = python3 --version
verify = git --version
`

func TestParseRecipe(t *testing.T) {
	r, err := ParseRecipe("x.recipe", []byte(goodRecipe))
	if err != nil {
		t.Fatalf("ParseRecipe(good) = %v", err)
	}
	want := Recipe{Suite: "bookworm", Variant: "minbase", Packages: []string{"git", "python3"},
		Verify: [][]string{{"python3", "--version"}, {"git", "--version"}}}
	if r.canonical() != want.canonical() {
		t.Errorf("ParseRecipe(good) = %+v, want %+v", r, want)
	}
}

func TestParseRecipeErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"no equals", "suite bookworm\n", "x.recipe:1: want `key = value`"},
		{"unknown key", "suite = bookworm\nmirror = http://x\n", `x.recipe:2: unknown key "mirror"`},
		{"empty value", "\n\nsuite =\n", "x.recipe:3: suite has no value"},
		{"duplicate", "suite = bookworm\nsuite = trixie\n", "x.recipe:2: suite is already set on line 1"},
		{"bad suite", "suite = ../etc\n", `x.recipe:1: suite "../etc"`},
		{"bad variant", "variant = huge\n", `x.recipe:1: variant "huge" is not one of`},
		{"option as package", "packages = python3 --hook-dir=/x\n", `x.recipe:1: "--hook-dir=/x" is not a Debian package name`},
		{"shell in verify", "verify = python3 -c 'import os'\n", `x.recipe:1: verify word "'import"`},
		{"missing keys", "suite = bookworm\n", "missing variant, packages, verify"},
		{"empty file", "", "missing suite, variant, packages, verify"},
		{"binary", "\x00\xff=\x01\n", "x.recipe:1: unknown key"},
		{"line too long", "packages = " + strings.Repeat("a", 70000) + "\n", "x.recipe: bufio.Scanner: token too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRecipe("x.recipe", []byte(tc.text))
			if !errors.Is(err, ErrBadRecipe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseRecipe(%.40q) = %v, want ErrBadRecipe mentioning %q", tc.text, err, tc.want)
			}
		})
	}
}

func TestDefaultRecipe(t *testing.T) {
	r, err := DefaultRecipe()
	if err != nil {
		t.Fatalf("DefaultRecipe() = %v", err)
	}
	for _, p := range []string{"python3", "python3-pytest", "git", "ca-certificates"} {
		if !slices.Contains(r.Packages, p) {
			t.Errorf("DefaultRecipe().Packages = %v, want %s", r.Packages, p)
		}
	}
	var verify []string
	for _, argv := range r.Verify {
		verify = append(verify, strings.Join(argv, " "))
	}
	if want := []string{"python3 --version", "python3 -m pytest --version", "git --version"}; !slices.Equal(verify, want) {
		t.Errorf("DefaultRecipe().Verify = %q, want %q", verify, want)
	}
	if r.Suite != "bookworm" || r.Variant != "minbase" {
		t.Errorf("DefaultRecipe() = %s %s, want bookworm minbase", r.Suite, r.Variant)
	}
}

func mustParse(t *testing.T, text string) Recipe {
	t.Helper()
	r, err := ParseRecipe("x.recipe", []byte(text))
	if err != nil {
		t.Fatalf("ParseRecipe(%q) = %v", text, err)
	}
	return r
}

func TestHash(t *testing.T) {
	base := mustParse(t, goodRecipe)
	h := base.hashFor("amd64")
	if len(h) != 16 || h != base.hashFor("amd64") {
		t.Fatalf("hashFor(amd64) = %q, then %q; want 16 stable hex digits", h, base.hashFor("amd64"))
	}
	same := mustParse(t, "verify=python3 --version\nverify =   git  --version\npackages = git python3 git\n variant=minbase\nsuite=bookworm")
	if got := same.hashFor("amd64"); got != h {
		t.Errorf("hash of the same recipe reordered and respaced = %s, want %s", got, h)
	}
	for _, tc := range []struct {
		name string
		r    Recipe
		arch string
	}{
		{"another package", mustParse(t, strings.Replace(goodRecipe, "git\n", "git curl\n", 1)), "amd64"},
		{"another suite", mustParse(t, strings.Replace(goodRecipe, "bookworm", "trixie", 1)), "amd64"},
		{"verification reordered", mustParse(t, "suite=bookworm\nvariant=minbase\npackages=python3 git\nverify=git --version\nverify=python3 --version\n"), "amd64"},
		{"another arch", base, "arm64"},
	} {
		if got := tc.r.hashFor(tc.arch); got == h {
			t.Errorf("%s: hash = %s, the same as before; want a new one", tc.name, got)
		}
	}
	if base.Hash() != base.hashFor(mustNativeArch(t)) {
		t.Errorf("Hash() = %s, want the hash for this machine's arch", base.Hash())
	}
}

func mustNativeArch(t *testing.T) string {
	t.Helper()
	arch, err := NativeArch()
	if err != nil {
		t.Fatalf("NativeArch() = %v", err)
	}
	return arch
}

func TestDebianArch(t *testing.T) {
	for _, tc := range []struct{ goarch, want string }{
		{"amd64", "amd64"}, {"arm64", "arm64"}, {"arm", "armhf"}, {"386", "i386"}, {"ppc64le", "ppc64el"}, {"riscv64", "riscv64"},
	} {
		if got, err := debianArch(tc.goarch); err != nil || got != tc.want {
			t.Errorf("debianArch(%q) = %q, %v; want %q", tc.goarch, got, err, tc.want)
		}
	}
	for _, goarch := range []string{"wasm", "", "mips"} {
		if got, err := debianArch(goarch); !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("debianArch(%q) = %q, %v; want ErrUnsupportedArch", goarch, got, err)
		}
	}
}

func TestMirrorFrom(t *testing.T) {
	deb822 := "Types: deb\n# comment\nURIs: http://mirror.example/debian http://other.example/debian\nSuites: bookworm\n\nTypes: deb\nURIs: http://security.example/debian-security\n"
	for _, tc := range []struct {
		name         string
		deb822, list string
		want         string
	}{
		{"deb822 first", deb822, "deb http://list.example/debian bookworm main\n", "http://mirror.example/debian"},
		{"sources.list", "", "# deb http://commented.example/debian bookworm main\ndeb-src http://src.example/debian bookworm main\ndeb http://list.example/debian bookworm main\n", "http://list.example/debian"},
		{"sources.list with options", "", "deb [arch=amd64 signed-by=/k.gpg] http://opt.example/debian bookworm main\n", "http://opt.example/debian"},
		{"one-word options", "", "deb [trusted=yes] http://opt.example/debian bookworm main\n", "http://opt.example/debian"},
		{"nothing", "", "", fallbackMirror},
		{"garbage", "URIs:\n\x00", "deb\ndeb [unterminated\n", fallbackMirror},
	} {
		if got := mirrorFrom([]byte(tc.deb822), []byte(tc.list)); got != tc.want {
			t.Errorf("%s: mirrorFrom = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckMirror(t *testing.T) {
	for _, m := range []string{"http://deb.debian.org/debian", "https://m.example/debian/", "file:///srv/mirror"} {
		if err := checkMirror(m); err != nil {
			t.Errorf("checkMirror(%q) = %v, want nil", m, err)
		}
	}
	for _, m := range []string{"--hook-dir=/tmp", "deb http://x bookworm main", "ftp://m.example/debian", "http://", "%zz"} {
		if err := checkMirror(m); err == nil {
			t.Errorf("checkMirror(%q) = nil, want an error", m)
		}
	}
}

func TestNspawnArgs(t *testing.T) {
	argv := []string{"python3", "--version"}
	bare := strings.Join(nspawnArgs("/c/root", argv, false), " ")
	if !strings.HasPrefix(bare, "--register=no --keep-unit ") || !strings.HasSuffix(bare, "-D /c/root --as-pid2 -- python3 --version") || !strings.Contains(bare, "--console=pipe") {
		t.Errorf("nspawnArgs without systemd = %q", bare)
	}
	if withSystemd := strings.Join(nspawnArgs("/c/root", argv, true), " "); strings.Contains(withSystemd, "--register") || strings.Contains(withSystemd, "--keep-unit") {
		t.Errorf("nspawnArgs on a systemd host = %q, want no --register=no / --keep-unit", withSystemd)
	}
}

func TestRunToolQuotesTheEnd(t *testing.T) {
	script := `for i in $(seq 1 30); do echo line$i; done; echo 'Attempted to remove disk file system under "/run/x", and we cannot allow that.' >&2; exit 3`
	var log strings.Builder
	out, err := runTool(context.Background(), "the step", &log, "/bin/sh", "-c", script)
	if err == nil || !strings.HasPrefix(err.Error(), "the step: exit status 3\n") {
		t.Fatalf("runTool(failing) = %v, want an error naming the step and the exit", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "line30") || !strings.Contains(msg, "line16") || strings.Contains(msg, "line15\n") || strings.Contains(msg, "Attempted") {
		t.Errorf("runTool error = %q, want the last %d lines without nspawn's warning", msg, tailLines)
	}
	if !strings.Contains(out, "line1\n") || !strings.Contains(log.String(), "line1\n") {
		t.Errorf("runTool output %q, log %q: want the whole output in both", out, log.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := runTool(ctx, "sleep", &log, "/bin/sleep", "10"); !errors.Is(err, context.Canceled) {
		t.Errorf("runTool(cancelled) = %v, want context.Canceled", err)
	}
	if out, err := runTool(context.Background(), "echo", &log, "/bin/echo", "Python 3.11.2"); err != nil || out != "Python 3.11.2" {
		t.Errorf("runTool(echo) = %q, %v; want the output", out, err)
	}
}

// fakeImage puts a verified-looking amd64 image of hash into cache.
func fakeImage(t *testing.T, cache, hash string, built time.Time) string {
	t.Helper()
	return fakeArchImage(t, cache, hash, "amd64", built)
}

// fakeArchImage is fakeImage for the Debian architecture arch.
func fakeArchImage(t *testing.T, cache, hash, arch string, built time.Time) string {
	t.Helper()
	dir := filepath.Join(cache, imagePrefix+hash)
	if err := os.MkdirAll(filepath.Join(dir, rootName), 0o755); err != nil {
		t.Fatal(err)
	}
	marker, err := json.Marshal(Image{Hash: hash, Arch: arch, Suite: "bookworm", Built: built})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerName), marker, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStatus(t *testing.T) {
	r := mustParse(t, goodRecipe)
	built := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	st, err := Status(filepath.Join(t.TempDir(), "absent"), r)
	if err != nil || st.Current != nil || len(st.Stale)+len(st.Unfinished) != 0 || st.Want != r.Hash() {
		t.Errorf("Status(absent cache) = %+v, %v; want empty, wanting %s", st, err, r.Hash())
	}

	cache := t.TempDir()
	tmp := filepath.Join(cache, ".sandbox-"+r.Hash()+".tmp-123")
	unmarked := filepath.Join(cache, "sandbox-0123456789abcdef")
	wrongMarker := fakeImage(t, cache, "1111111111111111", built)
	if err := os.Rename(wrongMarker, filepath.Join(cache, "sandbox-2222222222222222")); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, tmp, unmarked, filepath.Join(cache, "unrelated"))
	stale := fakeImage(t, cache, "feedfacefeedface", built)
	other := "arm64" // an architecture not this machine's
	if mustNativeArch(t) == other {
		other = "amd64"
	}
	foreign := fakeArchImage(t, cache, "a64a64a64a64a64a", other, built)
	st, err = Status(cache, r)
	if err != nil || st.Current != nil {
		t.Fatalf("Status(partial cache) = %+v, %v; want no current image", st, err)
	}
	if len(st.Foreign) != 1 || st.Foreign[0].Dir != foreign {
		t.Errorf("Status(partial cache).Foreign = %+v, want just the %s image %s", st.Foreign, other, foreign)
	}
	if len(st.Stale) != 1 || st.Stale[0].Dir != stale || !st.Stale[0].Built.Equal(built) {
		t.Errorf("Status(partial cache).Stale = %+v, want just %s built %v", st.Stale, stale, built)
	}
	wantUnfinished := []string{tmp, unmarked, filepath.Join(cache, "sandbox-2222222222222222")}
	slices.Sort(wantUnfinished)
	if !slices.Equal(st.Unfinished, wantUnfinished) {
		t.Errorf("Status(partial cache).Unfinished = %q, want %q", st.Unfinished, wantUnfinished)
	}

	current := fakeImage(t, cache, r.Hash(), built)
	st, err = Status(cache, r)
	if err != nil || st.Current == nil || st.Current.Dir != current || st.Current.Root != filepath.Join(current, "root") {
		t.Errorf("Status(cache with current) = %+v, %v; want current %s", st, err, current)
	}
}

func TestBuildUsesTheCacheWhateverTheMirror(t *testing.T) {
	t.Setenv("PATH", "") // no tools: a build would fail
	cache := t.TempDir()
	r := mustParse(t, goodRecipe)
	built := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dir := fakeImage(t, cache, r.Hash(), built)
	for _, mirror := range []string{"http://one.example/debian", "https://two.example/debian"} {
		img, err := Build(context.Background(), BuildOptions{CacheDir: cache, Mirror: mirror, Recipe: r})
		if err != nil || img.Fresh || img.Dir != dir || !img.Built.Equal(built) {
			t.Errorf("Build(mirror %s) = %+v, %v; want the cached image %s", mirror, img, err, dir)
		}
	}
}

func TestBuildCleansLeftoversAndNamesMissingTools(t *testing.T) {
	t.Setenv("PATH", "")
	cache := t.TempDir()
	r := mustParse(t, goodRecipe)
	tmp := filepath.Join(cache, ".sandbox-abc.tmp-99")
	unmarked := filepath.Join(cache, "sandbox-"+r.Hash())
	mkdirs(t, filepath.Join(tmp, "root", "usr"), unmarked)
	stale := fakeImage(t, cache, "feedfacefeedface", time.Now())

	_, err := Build(context.Background(), BuildOptions{CacheDir: cache, Mirror: "http://m.example/debian", Recipe: r})
	if !errors.Is(err, ErrMissingTool) || !strings.Contains(err.Error(), "apt-get install mmdebstrap") {
		t.Errorf("Build(no tools) = %v, want ErrMissingTool saying to install mmdebstrap", err)
	}
	for _, gone := range []string{tmp, unmarked} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Build, %s: %v; want it removed", gone, err)
		}
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a failed build removed the older image %s: %v", stale, err)
	}
}

func TestBuildRefusesBadInput(t *testing.T) {
	cache := t.TempDir()
	for _, tc := range []struct {
		name string
		opts BuildOptions
		want string
	}{
		{"option as mirror", BuildOptions{CacheDir: cache, Mirror: "--customize-hook=rm -rf /"}, "is not a URL"},
		{"cache is a file", BuildOptions{CacheDir: filepath.Join(cache, "f", "x"), Mirror: "http://m.example/debian"}, "image cache"},
		{"unknown architecture", BuildOptions{CacheDir: cache, Mirror: "http://m.example/debian", Arch: "--arch=x"}, "want one of amd64, arm64, armhf"},
	} {
		if tc.name == "cache is a file" {
			if err := os.WriteFile(filepath.Join(cache, "f"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Build(context.Background(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Build = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestRemoveOlderKeepsOtherArchitectures: a build replaces the images of
// its own architecture only, so the board's arm64 image, built here for
// its test VM, and this host's own can share the cache.
func TestRemoveOlderKeepsOtherArchitectures(t *testing.T) {
	cache := t.TempDir()
	built := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	older := fakeImage(t, cache, "0000000000000001", built)
	foreign := fakeArchImage(t, cache, "0000000000000002", "arm64", built)
	unmarked := filepath.Join(cache, imagePrefix+"0000000000000003")
	mkdirs(t, unmarked)
	keep := fakeImage(t, cache, "0000000000000004", built)
	var log strings.Builder
	removeOlder(cache, keep, "amd64", &log)
	for _, gone := range []string{older, unmarked} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after removeOlder, %s: %v; want it removed", gone, err)
		}
	}
	for _, kept := range []string{keep, foreign} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("removeOlder removed %s: %v (log: %s)", kept, err, log.String())
		}
	}
}

func TestCheckBinfmt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("qemu-aarch64", "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POF\noffset 0\n")
	write("qemu-arm", "disabled\ninterpreter /usr/libexec/qemu-binfmt/arm-binfmt-P\nflags: POF\n")
	write("qemu-x86_64", "enabled\ninterpreter /usr/libexec/qemu-binfmt/x86_64-binfmt-P\nflags: P\n")
	if err := checkBinfmt(dir, "arm64", "qemu-aarch64"); err != nil {
		t.Errorf("checkBinfmt(enabled, flags POF) = %v, want nil", err)
	}
	for _, tc := range []struct{ arch, name, want string }{
		{"arm64", "qemu-missing", "make test-deps installs qemu-user-static and registers it"},
		{"armhf", "qemu-arm", "entry is disabled"},
		{"amd64", "qemu-x86_64", "lacks the F flag"},
	} {
		if err := checkBinfmt(dir, tc.arch, tc.name); !errors.Is(err, ErrNoEmulation) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkBinfmt(%s) = %v, want ErrNoEmulation saying %q", tc.name, err, tc.want)
		}
	}
	if err := CheckEmulation("sparc"); !errors.Is(err, ErrUnsupportedArch) {
		t.Errorf("CheckEmulation(sparc) = %v, want ErrUnsupportedArch", err)
	}
}

func TestRemoveTreeRefusesMounts(t *testing.T) {
	testhost.Root(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "root", "proc")
	mkdirs(t, mnt)
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, 0)
	if err := removeTree(dir); err == nil || !strings.Contains(err.Error(), "still mounted") {
		t.Errorf("removeTree(with a mount inside) = %v, want a refusal", err)
	}
	if _, err := os.Stat(mnt); err != nil {
		t.Errorf("removeTree removed %s despite refusing: %v", mnt, err)
	}
}

// TestBuildReal builds the default image for real, once, then asks again.
func TestBuildReal(t *testing.T) {
	testhost.Root(t)
	testhost.Tool(t, "mmdebstrap", "mmdebstrap")
	testhost.Tool(t, "systemd-nspawn", "systemd-container")
	r, err := DefaultRecipe()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	older := fakeImage(t, cache, "feedfacefeedface", time.Now())
	var log strings.Builder
	img, err := Build(context.Background(), BuildOptions{CacheDir: cache, Log: &log})
	if err != nil {
		t.Fatalf("Build = %v\nlog:\n%s", err, lastLines(log.String(), 40))
	}
	if !img.Fresh || img.Hash != r.Hash() || img.Dir != filepath.Join(cache, "sandbox-"+r.Hash()) {
		t.Errorf("Build = %+v, want a fresh image of hash %s", img, r.Hash())
	}
	var outputs []string
	for _, c := range img.Checks {
		outputs = append(outputs, c.Output)
	}
	all := strings.Join(outputs, "\n")
	for _, want := range []string{"Python 3.", "pytest ", "git version "} {
		if !strings.Contains(all, want) {
			t.Errorf("verification printed %q, want %q among it", all, want)
		}
	}
	if _, err := os.Stat(filepath.Join(img.Root, "usr", "bin", "python3")); err != nil {
		t.Errorf("built root lacks python3: %v", err)
	}
	if _, err := os.Stat(older); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("older image %s: %v, want it removed after the build", older, err)
	}
	marker := filepath.Join(img.Dir, markerName)
	before, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("PATH", "") // a second build must not need the tools
	again, err := Build(context.Background(), BuildOptions{CacheDir: cache})
	if err != nil || again.Fresh || again.Dir != img.Dir || !again.Built.Equal(img.Built) {
		t.Errorf("second Build = %+v, %v; want the cached image %s", again, err, img.Dir)
	}
	if after, err := os.Stat(marker); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("second Build touched the marker: %v, %v", after, err)
	}
	st, err := Status(cache, r)
	if err != nil || st.Current == nil || st.Current.Dir != img.Dir || len(st.Stale)+len(st.Unfinished) != 0 {
		t.Errorf("Status after build = %+v, %v; want just the current image", st, err)
	}
	t.Logf("built and verified in %s", img.Took)
}

// TestABuildTakesDownADeadBuildsMounts: a build killed halfway (a go test
// past its timeout) leaves mmdebstrap's mounts in its root, and its lock
// goes with its process; the next build, holding the lock, unmounts them
// and removes the leftover, where it once refused ("…/root/dev/pts is
// still mounted (umount -R it first)"). What is beneath the mounts is
// not touched: a bind mount of a directory outside keeps its files.
func TestABuildTakesDownADeadBuildsMounts(t *testing.T) {
	testhost.Root(t)
	cache := t.TempDir()
	dead := filepath.Join(cache, tempPrefix+"0123abcd"+tempInfix+"42")
	dev, pts := filepath.Join(dead, "root", "dev"), filepath.Join(dead, "root", "dev", "pts")
	host := filepath.Join(t.TempDir(), "host-dev")
	mkdirs(t, dev, host)
	if err := os.WriteFile(filepath.Join(host, "keep"), []byte("the host's own"), 0o644); err != nil {
		t.Fatal(err)
	}
	// As mmdebstrap does: the host's /dev bound in, devpts over its pts.
	if err := syscall.Mount(host, dev, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dev, syscall.MNT_DETACH) })
	mkdirs(t, pts)
	if err := syscall.Mount("tmpfs", pts, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(pts, syscall.MNT_DETACH) })

	var log strings.Builder
	if err := removeUnfinished(cache, &log); err != nil {
		t.Fatalf("removeUnfinished with a dead build's mounts = %v, want them taken down and the build removed", err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead build %s is still there (%v)", dead, err)
	}
	if data, err := os.ReadFile(filepath.Join(host, "keep")); err != nil || string(data) != "the host's own" {
		t.Errorf("the file beneath the bind mount = %q, %v; want it untouched", data, err)
	}
	if !strings.Contains(log.String(), "unmount") {
		t.Errorf("the build's log says %q, want the unmounts named", log.String())
	}
}
