package image

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"shelldon/images"
)

// ErrBadRecipe is wrapped by every error about a recipe's content.
var ErrBadRecipe = errors.New("bad recipe")

// ErrUnsupportedArch means Go's architecture has no Debian port to build for.
var ErrUnsupportedArch = errors.New("no Debian architecture for this machine")

// formatVersion changes whenever the builder lays images out differently,
// so that images built by an older builder are rebuilt.
const formatVersion = "shelldon-sandbox-image 2"

// Recipe says what goes into an image and how to prove it works.
type Recipe struct {
	Suite    string     // Debian suite, e.g. bookworm
	Variant  string     // mmdebstrap --variant
	Packages []string   // installed on top of the variant, sorted
	Verify   [][]string // commands (argv) that must exit 0 inside the root, in order
}

var (
	debianName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]*$`) })
	// verifyWord keeps verification commands to plain words, since they are
	// split on spaces and never pass through a shell.
	verifyWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_./=:+-]+$`) })
	variants   = []string{"extract", "custom", "essential", "apt", "required", "minbase", "buildd", "important", "debootstrap", "standard"}
)

// LoadRecipe reads and parses the recipe file at path.
func LoadRecipe(path string) (Recipe, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Recipe{}, fmt.Errorf("read recipe: %w", err)
	}
	return ParseRecipe(path, data)
}

// DefaultRecipe is the recipe built into this binary (images/sandbox.recipe).
func DefaultRecipe() (Recipe, error) {
	return ParseRecipe("images/sandbox.recipe", images.SandboxRecipe)
}

// ParseRecipe parses a recipe: `key = value` lines, `#` comments. name is
// used in errors, which say the line at fault.
func ParseRecipe(name string, data []byte) (Recipe, error) {
	var r Recipe
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrBadRecipe, name, n, fmt.Sprintf(format, args...))
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return Recipe{}, bad("want `key = value`, got %q", line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if value == "" {
			return Recipe{}, bad("%s has no value", key)
		}
		if prev, dup := seen[key]; dup && key != "verify" {
			return Recipe{}, bad("%s is already set on line %d", key, prev)
		}
		seen[key] = n
		switch key {
		case "suite":
			if !debianName().MatchString(value) {
				return Recipe{}, bad("suite %q is not a Debian suite name", value)
			}
			r.Suite = value
		case "variant":
			if !slices.Contains(variants, value) {
				return Recipe{}, bad("variant %q is not one of %s", value, strings.Join(variants, ", "))
			}
			r.Variant = value
		case "packages":
			for _, p := range strings.Fields(value) {
				if !debianName().MatchString(p) {
					return Recipe{}, bad("%q is not a Debian package name", p)
				}
				r.Packages = append(r.Packages, p)
			}
		case "verify":
			argv := strings.Fields(value)
			for _, w := range argv {
				if !verifyWord().MatchString(w) {
					return Recipe{}, bad("verify word %q: only letters, digits and _./=:+- (no shell)", w)
				}
			}
			r.Verify = append(r.Verify, argv)
		default:
			return Recipe{}, bad("unknown key %q (want suite, variant, packages or verify)", key)
		}
	}
	if err := sc.Err(); err != nil {
		return Recipe{}, fmt.Errorf("%w: %s: %v", ErrBadRecipe, name, err)
	}
	var missing []string
	for _, key := range []string{"suite", "variant", "packages", "verify"} {
		if _, ok := seen[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return Recipe{}, fmt.Errorf("%w: %s: missing %s", ErrBadRecipe, name, strings.Join(missing, ", "))
	}
	slices.Sort(r.Packages)
	r.Packages = slices.Compact(r.Packages)
	return r, nil
}

// canonical is the recipe as the hash sees it: comments, spacing and
// package order do not matter; the order of verification commands does.
func (r Recipe) canonical() string {
	var b strings.Builder
	fmt.Fprintf(&b, "suite=%s\nvariant=%s\npackages=%s\n", r.Suite, r.Variant, strings.Join(r.Packages, " "))
	for _, argv := range r.Verify {
		fmt.Fprintf(&b, "verify=%s\n", strings.Join(argv, " "))
	}
	return b.String()
}

// Hash names the image this recipe builds on this machine: it covers the
// recipe, the builder's format and the native Debian architecture.
func (r Recipe) Hash() string {
	arch, err := NativeArch()
	if err != nil {
		arch = "go-" + runtime.GOARCH // never built, but still a distinct name
	}
	return r.hashFor(arch)
}

func (r Recipe) hashFor(arch string) string {
	sum := sha256.Sum256([]byte(formatVersion + "\narch=" + arch + "\n" + r.canonical()))
	return hex.EncodeToString(sum[:8])
}

// NativeArch is the Debian architecture of the machine this runs on.
func NativeArch() (string, error) { return debianArch(runtime.GOARCH) }

// debianArch maps a GOARCH to a Debian architecture. 32-bit arm maps to
// armhf, which needs ARMv7 — the oldest arm shelldon is released for.
func debianArch(goarch string) (string, error) {
	switch goarch {
	case "amd64", "arm64", "riscv64", "s390x":
		return goarch, nil
	case "arm":
		return "armhf", nil
	case "386":
		return "i386", nil
	case "ppc64le":
		return "ppc64el", nil
	case "mips64le":
		return "mips64el", nil
	}
	return "", fmt.Errorf("%w: GOARCH %s", ErrUnsupportedArch, goarch)
}

// fallbackMirror is used when the host names no Debian mirror.
const fallbackMirror = "http://deb.debian.org/debian"

// DefaultMirror is the host's own Debian mirror — the first URIs: of
// /etc/apt/sources.list.d/debian.sources, else the first deb line of
// /etc/apt/sources.list — or deb.debian.org.
func DefaultMirror() string {
	deb822, _ := os.ReadFile("/etc/apt/sources.list.d/debian.sources")
	list, _ := os.ReadFile("/etc/apt/sources.list")
	return mirrorFrom(deb822, list)
}

func mirrorFrom(deb822, list []byte) string {
	for _, line := range strings.Split(string(deb822), "\n") {
		if value, ok := strings.CutPrefix(strings.TrimSpace(line), "URIs:"); ok {
			if uris := strings.Fields(value); len(uris) > 0 {
				return uris[0]
			}
		}
	}
	for _, line := range strings.Split(string(list), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "deb" {
			continue
		}
		rest := fields[1:]
		if strings.HasPrefix(rest[0], "[") { // options: [arch=… signed-by=…]
			for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				rest = rest[1:]
			}
		}
		if len(rest) > 0 {
			return rest[0]
		}
	}
	return fallbackMirror
}

// checkMirror refuses what mmdebstrap would take as an option or a
// sources line rather than a mirror URL.
func checkMirror(mirror string) error {
	u, err := url.Parse(mirror)
	if err != nil || u.Host == "" && u.Scheme != "file" {
		return fmt.Errorf("mirror %q is not a URL", mirror)
	}
	switch u.Scheme {
	case "http", "https", "file":
		return nil
	}
	return fmt.Errorf("mirror %q: want an http, https or file URL", mirror)
}
