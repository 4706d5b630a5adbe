package image

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// DefaultCacheDir is where images live unless told otherwise.
const DefaultCacheDir = "/var/lib/shelldon/images"

// MountPoint is the directory of the image, relative to its root, where
// the sandbox mounts the workspace.
const MountPoint = "workspace"

// ErrMissingTool means mmdebstrap or systemd-nspawn is not installed; the
// error names the Debian package to install.
var ErrMissingTool = errors.New("missing tool")

// ErrNeedsRoot means Build ran as another user: mmdebstrap makes the
// root's files as root's, and systemd-nspawn verifies it, both as root.
var ErrNeedsRoot = errors.New("building the sandbox image needs root: run `sudo shelldon image build` (or `sudo make image`)")

const (
	imagePrefix = "sandbox-"
	tempPrefix  = ".sandbox-"
	tempInfix   = ".tmp-"
	markerName  = ".verified"
	rootName    = "root"
	lockName    = ".lock"
	// tailLines is how much of a failing tool's output an error quotes.
	tailLines = 15
	// nspawnNoise is a warning systemd-nspawn prints on hosts without
	// systemd as PID 1; it says nothing about the command.
	nspawnNoise = "Attempted to remove disk file system under"
)

// BuildOptions says where and from what to build.
type BuildOptions struct {
	CacheDir string // default DefaultCacheDir
	Mirror   string // Debian mirror URL; default DefaultMirror()
	Recipe   Recipe // zero value: DefaultRecipe()
	// Arch is the Debian architecture to build for; "" is this machine's
	// own ([NativeArch]). Another one (arm64 on an amd64 host, say: the
	// board's image) runs its programs through qemu-user-static, which
	// binfmt_misc must have registered ([ErrNoEmulation]).
	Arch string
	Log  io.Writer // progress and the tools' output; nil discards it
}

// Check is one verification command and what it printed.
type Check struct {
	Command string `json:"command"`
	Output  string `json:"output"`
}

// Image is a built and verified sandbox root.
type Image struct {
	Dir    string    `json:"-"` // <cache>/sandbox-<hash>
	Root   string    `json:"-"` // the root file system: Dir/root
	Hash   string    `json:"hash"`
	Arch   string    `json:"arch"`
	Suite  string    `json:"suite"`
	Mirror string    `json:"mirror"`
	Built  time.Time `json:"built"`
	Took   string    `json:"took"` // how long building and verifying took
	Checks []Check   `json:"checks"`
	// Fresh is true when this call built the image, false when it came
	// from the cache.
	Fresh bool `json:"-"`
}

// Build returns the image for the recipe, building and verifying it first
// unless the cache already holds it. A failed build leaves nothing behind
// but the error, which names the step and quotes the tool's last lines.
// Builds into one cache take turns. Only root may build
// ([ErrNeedsRoot]).
func Build(ctx context.Context, opts BuildOptions) (img Image, err error) {
	if os.Geteuid() != 0 {
		return Image{}, ErrNeedsRoot
	}
	recipe, err := opts.recipe()
	if err != nil {
		return Image{}, err
	}
	cache := opts.CacheDir
	if cache == "" {
		cache = DefaultCacheDir
	}
	mirror := opts.Mirror
	if mirror == "" {
		mirror = DefaultMirror()
	}
	if err := checkMirror(mirror); err != nil {
		return Image{}, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	arch, err := opts.arch()
	if err != nil {
		return Image{}, err
	}
	hash := recipe.hashFor(arch)

	final := filepath.Join(cache, imagePrefix+hash)
	// A verified image is only ever renamed into place whole, so finding
	// one takes no lock, and a long build of another architecture in the
	// same cache does not hold up this one's users.
	if img, err := readImage(final); err == nil {
		return img, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return Image{}, fmt.Errorf("image cache: %w", err)
	}
	unlock, err := lockCache(ctx, cache, log)
	if err != nil {
		return Image{}, err
	}
	defer unlock()

	if img, err := readImage(final); err == nil {
		return img, nil // built while this waited for the lock
	}
	// Holding the lock, anything unfinished — a temporary directory, an
	// image directory without a valid marker (this one included) — is left
	// over from a build that died.
	if err := removeUnfinished(cache, log); err != nil {
		return Image{}, err
	}
	mmdebstrap, err := findTool("mmdebstrap", "mmdebstrap")
	if err != nil {
		return Image{}, err
	}
	nspawn, err := findTool("systemd-nspawn", "systemd-container")
	if err != nil {
		return Image{}, err
	}

	start := time.Now()
	tmp, err := os.MkdirTemp(cache, tempPrefix+hash+tempInfix)
	if err != nil {
		return Image{}, fmt.Errorf("image cache: %w", err)
	}
	defer func() {
		if err != nil {
			if rmErr := removeTree(tmp); rmErr != nil {
				err = fmt.Errorf("%w (and clean up: %v)", err, rmErr)
			}
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Image{}, fmt.Errorf("image cache: %w", err)
	}
	root := filepath.Join(tmp, rootName)
	fmt.Fprintf(log, "building sandbox image %s (%s %s, %s) from %s\n", hash, recipe.Suite, recipe.Variant, arch, mirror)
	args := []string{"--variant=" + recipe.Variant, "--arch=" + arch, "--include=" + strings.Join(recipe.Packages, ","), recipe.Suite, root, mirror}
	if _, err := runTool(ctx, "mmdebstrap", log, mmdebstrap, args...); err != nil {
		return Image{}, err
	}
	// The sandbox runs the root read-only, so the workspace's mount
	// point must already be there.
	if err := os.Mkdir(filepath.Join(root, MountPoint), 0o755); err != nil {
		return Image{}, fmt.Errorf("make the workspace mount point: %w", err)
	}
	img = Image{Hash: hash, Arch: arch, Suite: recipe.Suite, Mirror: mirror}
	systemdHost := SystemdIsInit()
	for _, argv := range recipe.Verify {
		command := strings.Join(argv, " ")
		fmt.Fprintf(log, "verifying: %s\n", command)
		out, err := runTool(ctx, "verify `"+command+"`", log, nspawn, nspawnArgs(root, argv, systemdHost)...)
		if err != nil {
			return Image{}, err
		}
		img.Checks = append(img.Checks, Check{Command: command, Output: out})
	}
	img.Built = time.Now().UTC()
	img.Took = img.Built.Sub(start).Round(time.Millisecond).String()
	marker, err := json.MarshalIndent(img, "", "  ")
	if err != nil {
		return Image{}, fmt.Errorf("image marker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, markerName), append(marker, '\n'), 0o644); err != nil {
		return Image{}, fmt.Errorf("image marker: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return Image{}, fmt.Errorf("put image in place: %w", err)
	}
	img.Dir, img.Root, img.Fresh = final, filepath.Join(final, rootName), true
	fmt.Fprintf(log, "sandbox image %s ready in %s: %s\n", hash, img.Took, img.Root)
	removeOlder(cache, final, arch, log)
	return img, nil
}

// BuildRecipe builds the image of a recipe held in memory (an embedded one
// of images/, named for errors) for the Debian architecture arch ("" for
// this machine's) into cacheDir, as Build does, within 45 minutes: a
// foreign architecture's packages are configured under emulation, and
// the arm64 test VM's root, its initrd made by qemu-user, took 15 minutes
// on a loaded 2-core host.
func BuildRecipe(cacheDir, name string, data []byte, arch string) (Image, error) {
	recipe, err := ParseRecipe(name, data)
	if err != nil {
		return Image{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	return Build(ctx, BuildOptions{CacheDir: cacheDir, Recipe: recipe, Arch: arch})
}

// Built reports whether cacheDir holds the verified image of r for arch
// ("" for this machine's): Build finds it there without building.
func Built(cacheDir string, r Recipe, arch string) bool {
	if arch == "" {
		native, err := NativeArch()
		if err != nil {
			return false
		}
		arch = native
	}
	_, err := readImage(filepath.Join(cacheDir, imagePrefix+r.hashFor(arch)))
	return err == nil
}

// arch is the architecture to build for, checked: a foreign one must be
// one Debian has and this host must run its programs.
func (o BuildOptions) arch() (string, error) {
	native, err := NativeArch()
	if o.Arch == "" || err == nil && o.Arch == native {
		return native, err
	}
	if err := CheckEmulation(o.Arch); err != nil {
		return "", err
	}
	return o.Arch, nil
}

func (o BuildOptions) recipe() (Recipe, error) {
	if o.Recipe.Suite == "" {
		return DefaultRecipe()
	}
	return o.Recipe, nil
}

// CacheStatus is what an image cache holds, judged against one recipe.
type CacheStatus struct {
	CacheDir string
	Want     string  // the hash the recipe builds on this machine
	Current  *Image  // the verified image of that hash, if there is one
	Stale    []Image // verified images of other recipes (the next build removes them)
	// Foreign are verified images for other architectures (a board's,
	// built here for its test VM); builds leave them alone.
	Foreign []Image
	// Unfinished are directories of builds that did not finish; the next
	// build removes them.
	Unfinished []string
}

// Status reads the cache without changing it. A cache that does not exist
// yet is empty, not an error.
func Status(cacheDir string, r Recipe) (CacheStatus, error) {
	st := CacheStatus{CacheDir: cacheDir, Want: r.Hash()}
	native, _ := NativeArch()
	entries, err := os.ReadDir(cacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("image cache: %w", err)
	}
	for _, e := range entries {
		name, dir := e.Name(), filepath.Join(cacheDir, e.Name())
		switch {
		case isUnfinished(name):
			st.Unfinished = append(st.Unfinished, dir)
		case strings.HasPrefix(name, imagePrefix):
			img, err := readImage(dir)
			switch {
			case err != nil:
				st.Unfinished = append(st.Unfinished, dir)
			case img.Hash == st.Want:
				st.Current = &img
			case img.Arch != native:
				st.Foreign = append(st.Foreign, img)
			default:
				st.Stale = append(st.Stale, img)
			}
		}
	}
	return st, nil
}

// readImage reads the marker of an image directory; any error means
// there is no verified image there.
func readImage(dir string) (Image, error) {
	data, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return Image{}, fmt.Errorf("image %s: %w", dir, err)
	}
	var img Image
	if err := json.Unmarshal(data, &img); err != nil {
		return Image{}, fmt.Errorf("image %s: marker: %w", dir, err)
	}
	if want := strings.TrimPrefix(filepath.Base(dir), imagePrefix); img.Hash != want {
		return Image{}, fmt.Errorf("image %s: marker is for %q", dir, img.Hash)
	}
	img.Dir, img.Root = dir, filepath.Join(dir, rootName)
	return img, nil
}

func isUnfinished(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.Contains(name, tempInfix)
}

// removeUnfinished removes temporary build directories and image
// directories without a valid marker. Call it holding the lock.
func removeUnfinished(cache string, log io.Writer) error {
	entries, err := os.ReadDir(cache)
	if err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(cache, e.Name())
		if !isUnfinished(e.Name()) {
			if _, err := readImage(dir); err == nil || !strings.HasPrefix(e.Name(), imagePrefix) {
				continue
			}
		}
		fmt.Fprintf(log, "removing unfinished build %s\n", dir)
		// A build killed halfway leaves mmdebstrap's mounts (the host's
		// /dev, /proc, /sys bound in) while its lock went with its
		// process: they are this build's to take down now.
		if err := unmountUnder(dir, log); err != nil {
			return err
		}
		if err := removeTree(dir); err != nil {
			return err
		}
	}
	return nil
}

// removeOlder removes every image of keep's architecture but keep; the
// images of other architectures are other builds' to replace. Failing to
// is not failing the build, so it is only reported.
func removeOlder(cache, keep, arch string, log io.Writer) {
	entries, err := os.ReadDir(cache)
	if err != nil {
		fmt.Fprintf(log, "could not look for older images: %v\n", err)
		return
	}
	for _, e := range entries {
		dir := filepath.Join(cache, e.Name())
		if !strings.HasPrefix(e.Name(), imagePrefix) || dir == keep {
			continue
		}
		// An image without a readable marker is unfinished, and removed.
		if img, err := readImage(dir); err == nil && img.Arch != arch {
			continue
		}
		fmt.Fprintf(log, "removing older image %s\n", dir)
		if err := removeTree(dir); err != nil {
			fmt.Fprintf(log, "could not remove older image: %v\n", err)
		}
	}
}

// mountsUnder lists the mount points at or under dir, from
// /proc/self/mountinfo, in the order they were mounted.
func mountsUnder(dir string) ([]string, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("check mounts under %s: %w", dir, err)
	}
	var mounts []string
	for _, line := range strings.Split(string(info), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			mounts = append(mounts, mp)
		}
	}
	return mounts, nil
}

// unmountUnder detaches every mount under dir, the last mounted first
// (as umount -R does), so that removing dir cannot reach through a bind
// mount into the host's own files.
func unmountUnder(dir string, log io.Writer) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, mp := range slices.Backward(mounts) {
		fmt.Fprintf(log, "unmounting %s, left by a build that did not finish\n", mp)
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmount %s, left by a build that did not finish: %w", mp, err)
		}
	}
	return nil
}

// removeTree removes dir unless something is still mounted inside it: a
// build killed halfway may leave the host's /dev or /proc bound into the
// root, and removing through those would delete the host's own files.
func removeTree(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("not removing %s: %s is still mounted (umount -R it first)", dir, mounts[0])
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// lockCache takes the cache's lock, waiting while another build holds it.
func lockCache(ctx context.Context, cache string, log io.Writer) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(cache, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock image cache: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock image cache: %w", err)
		}
		if !waited {
			fmt.Fprintf(log, "waiting for another build in %s\n", cache)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock image cache: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func findTool(name, debianPackage string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not installed (apt-get install %s)", ErrMissingTool, name, debianPackage)
	}
	return path, nil
}

// SystemdIsInit reports whether systemd is PID 1, which decides how
// systemd-nspawn may register its containers and whether a unit can hold
// a container's limits.
func SystemdIsInit() bool {
	_, err := os.Stat("/run/systemd/system")
	return err == nil
}

// nspawnArgs runs argv in root, read-only and without network, so that
// verifying neither changes the image nor depends on the network.
// Without systemd as PID 1 there is no machined to register with and no
// unit to create.
func nspawnArgs(root string, argv []string, systemdHost bool) []string {
	var args []string
	if !systemdHost {
		args = append(args, "--register=no", "--keep-unit")
	}
	args = append(args, "--quiet", "--console=pipe", "--read-only", "--private-network", "-D", root, "--as-pid2", "--")
	return append(args, argv...)
}

// runTool runs a program with stdin from /dev/null (systemd-nspawn can
// hang on a terminal), copying its output to log. It returns the output,
// and on failure an error naming step and quoting the output's end.
func runTool(ctx context.Context, step string, log io.Writer, path string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = io.MultiWriter(log, &out)
	cmd.Stderr = cmd.Stdout
	// SIGTERM first: mmdebstrap unmounts what it mounted before it exits.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	err := cmd.Run()
	text := cleanOutput(out.String())
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if err != nil {
		return text, fmt.Errorf("%s: %w\n%s", step, err, lastLines(text, tailLines))
	}
	return text, nil
}

func cleanOutput(s string) string {
	var kept []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), nspawnNoise) {
			kept = append(kept, sc.Text())
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
