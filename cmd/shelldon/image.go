package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"shelldon/sandbox/image"
)

// cmdImage builds the sandbox image (`shelldon image build`) or says what
// the image cache holds (`shelldon image status`).
func cmdImage(ctx context.Context, env *environment, args []string) error {
	which, args, err := verb("image", args, "build", "status")
	if err != nil {
		return err
	}
	var cache, recipePath, mirror string
	// The image cache is the sandbox's, not the configuration's: the
	// configuration is read only to stop on a broken one, as every
	// command does.
	if _, err := parseConfig("image "+which, args, func(fs *flag.FlagSet) {
		fs.StringVar(&cache, "cache", image.DefaultCacheDir, "the image cache `DIR`")
		fs.StringVar(&recipePath, "recipe", "", "a recipe `FILE` instead of the built-in images/sandbox.recipe")
		if which == "build" {
			fs.StringVar(&mirror, "mirror", "", "the Debian mirror's `URL` (default: this host's own, else deb.debian.org)")
		}
	}); err != nil {
		return err
	}
	recipe, err := loadRecipe(recipePath)
	if err != nil {
		return err
	}
	if which == "status" {
		return printImageStatus(env, cache, recipe)
	}
	img, err := image.Build(ctx, image.BuildOptions{CacheDir: cache, Mirror: mirror, Recipe: recipe, Log: env.stderr})
	if err != nil {
		return err
	}
	how := "already built"
	if img.Fresh {
		how = "built and verified in " + img.Took
	}
	fmt.Fprintf(env.stdout, "sandbox image %s: %s\n%s\n", img.Hash, how, img.Root)
	return nil
}

func loadRecipe(path string) (image.Recipe, error) {
	if path == "" {
		return image.DefaultRecipe()
	}
	return image.LoadRecipe(path)
}

func printImageStatus(env *environment, cache string, recipe image.Recipe) error {
	st, err := image.Status(cache, recipe)
	if err != nil {
		return err
	}
	if st.Current != nil {
		c := st.Current
		var checks []string
		for _, ch := range c.Checks {
			checks = append(checks, ch.Output)
		}
		fmt.Fprintf(env.stdout, "current: %s (%s %s, built %s from %s)\n  root: %s\n  verified: %s\n",
			c.Hash, c.Suite, c.Arch, c.Built.Local().Format(time.DateTime), c.Mirror, c.Root, strings.Join(checks, "; "))
	} else {
		fmt.Fprintf(env.stdout, "current: none for recipe %s in %s — run `shelldon image build`\n", st.Want, cache)
	}
	for _, s := range st.Stale {
		fmt.Fprintf(env.stdout, "stale: %s (built %s; the next build removes it)\n", s.Dir, s.Built.Local().Format(time.DateTime))
	}
	for _, f := range st.Foreign {
		fmt.Fprintf(env.stdout, "other architecture: %s (%s, built %s; builds for this one keep it)\n", f.Dir, f.Arch, f.Built.Local().Format(time.DateTime))
	}
	for _, dir := range st.Unfinished {
		fmt.Fprintf(env.stdout, "unfinished: %s (the next build removes it)\n", dir)
	}
	if st.Current == nil {
		return errQuiet
	}
	return nil
}
