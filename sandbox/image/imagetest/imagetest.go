// Package imagetest gives tests the real sandbox image, built once and
// then reused from the image cache by every test that needs it.
package imagetest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"shelldon/sandbox/image"
	"shelldon/testhost"
)

// CacheEnv names a variable that overrides where test images are cached.
const CacheEnv = "SHELLDON_IMAGE_CACHE"

var (
	once  sync.Once
	built image.Image
	err   error
)

// Image returns the default sandbox image, building it first if the cache
// lacks it (about 20 s; then milliseconds). The cache is the one `make
// image` fills, so a machine that built the image once never builds it
// again for tests. It skips, or fails where every test level is
// required, when the host lacks root or the tools.
func Image(t testing.TB) image.Image {
	t.Helper()
	testhost.Root(t)
	testhost.Tool(t, "systemd-nspawn", "systemd-container")
	once.Do(func() {
		cache := os.Getenv(CacheEnv)
		if cache == "" {
			cache = image.DefaultCacheDir
		}
		built, err = image.Build(context.Background(), image.BuildOptions{CacheDir: cache})
	})
	if errors.Is(err, image.ErrMissingTool) {
		testhost.Missing(t, "the sandbox image or mmdebstrap to build it", "apt-get install mmdebstrap, or run `make image`")
	}
	if err != nil {
		t.Fatalf("building the sandbox image: %v", err)
	}
	return built
}
