package systemdhost

import (
	"context"
	"os"
	"testing"

	"shelldon/images"
	"shelldon/sandbox/image"
)

func TestBuildOnly(t *testing.T) {
	r, err := image.ParseRecipe("images/testhost.recipe", images.TestHostRecipe)
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Build(context.Background(), image.BuildOptions{CacheDir: "/var/lib/shelldon/testhost-images", Recipe: r, Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(img.Root, img.Took)
}
