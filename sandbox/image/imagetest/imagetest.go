// Package imagetest gives tests the real sandbox image, built once and
// then reused from the image cache by every test that needs it.
package imagetest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"shelldon/sandbox/image"
	"shelldon/testhost"
)

// CacheEnv names a variable that overrides where test images are cached.
const CacheEnv = "SHELLDON_IMAGE_CACHE"

// build is one architecture's image, built once per test binary.
type build struct {
	once sync.Once
	img  image.Image
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
)

// Image returns the default sandbox image, building it first if the cache
// lacks it (about 20 s; then milliseconds). The cache is the one `make
// image` fills, so a machine that built the image once never builds it
// again for tests. It skips, or fails where every test level is
// required, when the host lacks root or the tools.
func Image(t testing.TB) image.Image {
	t.Helper()
	return ForArch(t, "")
}

// ForArch is [Image] for the Debian architecture arch ("" for this
// machine's): the board's arm64 image, say, for a test VM of the board's
// architecture, built here under qemu-user-static (minutes, not
// seconds). It skips, naming what is missing, where binfmt_misc cannot
// run arch's programs.
func ForArch(t testing.TB, arch string) image.Image {
	t.Helper()
	testhost.Root(t)
	testhost.Tool(t, "systemd-nspawn", "systemd-container")
	buildsMu.Lock()
	b := builds[arch]
	if b == nil {
		b = &build{}
		builds[arch] = b
	}
	buildsMu.Unlock()
	cache := os.Getenv(CacheEnv)
	if cache == "" {
		cache = image.DefaultCacheDir
	}
	if recipe, err := image.DefaultRecipe(); err == nil && !image.Built(cache, recipe, arch) {
		testhost.TimeToBuild(t, "the "+archName(arch)+" sandbox image", buildTakes(arch))
	}
	b.once.Do(func() {
		b.img, b.err = image.Build(context.Background(), image.BuildOptions{CacheDir: cache, Arch: arch})
		if b.err == nil && b.img.Fresh {
			t.Logf("sandbox image for %s built in %s: %s", b.img.Arch, b.img.Took, b.img.Root)
		}
	})
	if errors.Is(b.err, image.ErrMissingTool) {
		testhost.Missing(t, "the sandbox image or mmdebstrap to build it", "apt-get install mmdebstrap, or run `make image`")
	}
	if errors.Is(b.err, image.ErrNoEmulation) {
		testhost.Missing(t, "qemu-user-static registered with binfmt_misc", b.err.Error())
	}
	if b.err != nil {
		t.Fatalf("building the sandbox image: %v", b.err)
	}
	return b.img
}

// buildTakes bounds how long building the sandbox image for arch takes:
// a minute or two here, far longer for a foreign architecture, whose
// packages are configured under emulation.
func buildTakes(arch string) time.Duration {
	if native, _ := image.NativeArch(); arch == "" || arch == native {
		return 5 * time.Minute
	}
	return 30 * time.Minute
}

// archName names arch for a message: "" is this machine's.
func archName(arch string) string {
	if arch == "" {
		arch, _ = image.NativeArch()
	}
	return arch
}
