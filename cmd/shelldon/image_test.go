package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shelldon/sandbox/image"
)

func TestImageUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"image"}, {"image", "frob"}, {"image", "status", "extra"}, {"image", "status", "--mirror", "http://m.example"}, {"image", "build", "--nope"}} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("shelldon %q = nil, want a usage error", args)
		}
	}
}

func TestImageRecipeErrorNamesTheLine(t *testing.T) {
	recipe := filepath.Join(t.TempDir(), "bad.recipe")
	if err := os.WriteFile(recipe, []byte("suite = bookworm\nflavour = mild\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, "image", "status", "--cache", t.TempDir(), "--recipe", recipe)
	if !errors.Is(err, image.ErrBadRecipe) || !strings.Contains(err.Error(), "bad.recipe:2:") {
		t.Errorf("image status --recipe bad = %v, want a recipe error naming line 2", err)
	}
}

func TestImageBuildRefusesBadMirror(t *testing.T) {
	_, _, err := runCLI(t, "image", "build", "--cache", t.TempDir(), "--mirror", "ftp://m.example/debian")
	if err == nil || !strings.Contains(err.Error(), "ftp://m.example/debian") {
		t.Errorf("image build --mirror ftp://… = %v, want an error naming the mirror", err)
	}
}

func TestImageStatus(t *testing.T) {
	cache := t.TempDir()
	out, _, err := runCLI(t, "image", "status", "--cache", cache)
	if !errors.Is(err, errQuiet) || !strings.Contains(out, "current: none") || !strings.Contains(out, "shelldon image build") {
		t.Errorf("image status (empty cache) = %q, %v; want none, the fix, and a failure", out, err)
	}

	r, err := image.DefaultRecipe()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "sandbox-"+r.Hash())
	// The board's image beside it, as its test VM leaves it.
	foreign := filepath.Join(cache, "sandbox-a64a64a64a64a64a")
	for _, img := range []image.Image{
		{Dir: dir, Hash: r.Hash(), Suite: "bookworm", Arch: "amd64", Mirror: "http://m.example/debian",
			Built: time.Now(), Checks: []image.Check{{Command: "git --version", Output: "git version 2.39.5"}}},
		{Dir: foreign, Hash: "a64a64a64a64a64a", Suite: "bookworm", Arch: "arm64", Mirror: "http://m.example/debian", Built: time.Now()},
	} {
		if err := os.MkdirAll(filepath.Join(img.Dir, "root"), 0o755); err != nil {
			t.Fatal(err)
		}
		marker, err := json.Marshal(img)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(img.Dir, ".verified"), marker, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(cache, ".sandbox-x.tmp-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, "image", "status", "--cache", cache)
	for _, want := range []string{"current: " + r.Hash(), filepath.Join(dir, "root"), "git version 2.39.5", "unfinished: " + filepath.Join(cache, ".sandbox-x.tmp-1"),
		"other architecture: " + foreign + " (arm64"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("image status = %q, %v; want it to mention %q", out, err, want)
		}
	}
}
