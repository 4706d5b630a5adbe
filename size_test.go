package shelldon

import (
	"cmp"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The binaries go onto a board's SD card and every page of them that a
// process touches is memory, so their size is measured as `make release`
// builds them, and what makes it up is broken down by package: the
// figures behind BENCHMARKS.md's "Size". Reproduce with
//
//	go test -run '^$' -bench '^BenchmarkBinarySize$' -benchtime 1x .
//
// which reports each binary's stripped size per platform and logs (all of
// it with -v), for linux/arm64, the packages and the modules whose code
// and data take the most room.

// releaseLDFlags are the Makefile's, but for the version stamp.
const releaseLDFlags = "-s -w"

// sizeBreakdownTop is how many packages and modules the log names.
const sizeBreakdownTop = 25

// BenchmarkBinarySize builds every main package of the module for each
// released platform and reports its stripped size.
func BenchmarkBinarySize(b *testing.B) {
	mains, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./...").Output()
	if err != nil {
		b.Fatalf("go list: %v", err)
	}
	for _, main := range strings.Fields(string(mains)) {
		for _, p := range releasedPlatforms {
			b.Run(filepath.Base(main)+"/"+p.goarch+p.goarm, func(b *testing.B) {
				stripped := buildFor(b, main, p, releaseLDFlags)
				info, err := os.Stat(stripped)
				if err != nil {
					b.Fatal(err)
				}
				if p.goarch == "arm64" {
					// The symbol table says what the bytes are; -w alone
					// keeps it and leaves the code as released.
					withSymbols := buildFor(b, main, p, "-w")
					bySize, err := sizeByPackage(withSymbols)
					if err != nil {
						b.Fatal(err)
					}
					modules, err := binaryModules(withSymbols)
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("%s on %s: %d bytes stripped\n%s", main, p, info.Size(), formatBreakdown(bySize, modules))
				}
				b.ReportMetric(float64(info.Size()), "bytes")
				b.ReportMetric(float64(info.Size())/(1<<20), "MiB")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// buildFor builds main for p with the release flags and these ldflags,
// into a directory removed after the benchmark.
func buildFor(b *testing.B, main string, p platform, ldflags string) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), filepath.Base(main))
	build := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, main)
	build.Env = append(os.Environ(), "GOOS="+p.goos, "GOARCH="+p.goarch, "GOARM="+p.goarm, "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build %s for %s: %v\n%s", main, p, err, msg)
	}
	return out
}

// sizeByPackage sums the sizes of a binary's symbols (what `go tool nm
// -size` lists) by the package each belongs to, leaving out those in
// sections that take no room in the file (.bss, .noptrbss: zeroed at start).
func sizeByPackage(binary string) (map[string]int64, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("read the symbols of %s: %w", binary, err)
	}
	defer f.Close()
	symbols, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("read the symbols of %s: %w (built with -s?)", binary, err)
	}
	sizes := map[string]int64{}
	for _, s := range symbols {
		if int(s.Section) >= len(f.Sections) || f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		sizes[symbolPackage(s.Name)] += int64(s.Size)
	}
	return sizes, nil
}

// symbolPackage is the import path of the package a symbol belongs to:
// "github.com/a/b.(*T).M" and "type:*github.com/a/b.T" are github.com/a/b's.
// The linker's own tables (go:…, runtime.etext, …) are named as such.
func symbolPackage(name string) string {
	name = strings.TrimPrefix(name, "type:")
	name = strings.TrimLeft(name, "*[]")
	if strings.HasPrefix(name, "go:") || name == "" {
		return "(linker tables: go:*)"
	}
	slash := strings.LastIndex(name, "/")
	// A generic instantiation names other packages in brackets.
	if bracket := strings.Index(name, "["); bracket >= 0 && bracket < slash {
		slash = strings.LastIndex(name[:bracket], "/")
	}
	dot := strings.Index(name[slash+1:], ".")
	if dot < 0 {
		return name
	}
	return name[:slash+1+dot]
}

// binaryModules are the modules a binary was built from (`go version -m`).
func binaryModules(binary string) ([]string, error) {
	out, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		return nil, fmt.Errorf("go version -m %s: %w", binary, err)
	}
	var modules []string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && (fields[0] == "dep" || fields[0] == "mod") {
			modules = append(modules, fields[1])
		}
	}
	return modules, nil
}

// moduleOf is the module of modules that holds pkg, or "std" (the
// standard library and the runtime's tables).
func moduleOf(pkg string, modules []string) string {
	best := ""
	for _, m := range modules {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return "std"
	}
	return best
}

// formatBreakdown is the log's table: the largest packages, then the
// largest modules, each with its bytes and share.
func formatBreakdown(bySize map[string]int64, modules []string) string {
	var total int64
	byModule := map[string]int64{}
	for pkg, size := range bySize {
		total += size
		byModule[moduleOf(pkg, modules)] += size
	}
	var w strings.Builder
	table := func(title string, sizes map[string]int64) {
		names := make([]string, 0, len(sizes))
		for name := range sizes {
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(sizes[b], sizes[a]), strings.Compare(a, b)) })
		fmt.Fprintf(&w, "%s (of %d bytes of symbols):\n", title, total)
		for _, name := range names[:min(len(names), sizeBreakdownTop)] {
			fmt.Fprintf(&w, "  %10d  %5.1f%%  %s\n", sizes[name], 100*float64(sizes[name])/float64(total), name)
		}
	}
	table("largest packages", bySize)
	table("largest modules", byModule)
	return w.String()
}

// TestSymbolPackage pins how a symbol's package is found, for the names
// the linker writes.
func TestSymbolPackage(t *testing.T) {
	for name, want := range map[string]string{
		"github.com/containerd/cgroups/v3/cgroup2/stats.(*Metrics).ProtoReflect": "github.com/containerd/cgroups/v3/cgroup2/stats",
		"type:*github.com/godbus/dbus/v5.Conn":                                   "github.com/godbus/dbus/v5",
		"runtime.mallocgc":                                                       "runtime",
		"modernc.org/sqlite/lib.Xsqlite3VdbeExec":                                "modernc.org/sqlite/lib",
		"slices.SortFunc[[]string,func(string, string) int]":                     "slices",
		"encoding/json.(*decodeState).object":                                    "encoding/json",
		"go:itab.*os.File,io.Writer":                                             "(linker tables: go:*)",
		"type:[]shelldon/contracts.Op":                                           "shelldon/contracts",
	} {
		if got := symbolPackage(name); got != want {
			t.Errorf("symbolPackage(%q) = %q, want %q", name, got, want)
		}
	}
	if got := moduleOf("modernc.org/sqlite/lib", []string{"modernc.org/sqlite", "modernc.org/libc"}); got != "modernc.org/sqlite" {
		t.Errorf("moduleOf = %q", got)
	}
	if got := moduleOf("net/http", []string{"modernc.org/sqlite"}); got != "std" {
		t.Errorf("moduleOf(net/http) = %q", got)
	}
}
