package render

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestTheFontIsInTheProgramsReadOnlyPages pins where the embedded font
// lives: in a mapping of the binary the process never writes, the pages
// giveback lets go of between draws. In the writable data segment the
// pages a draw read would stay the panel's for as long as it runs.
func TestTheFontIsInTheProgramsReadOnlyPages(t *testing.T) {
	// A glyph is drawn first, as the panel does, so the font is in use.
	if g := glyphs().shape(16, []rune("shelldon")); len(g) != 8 {
		t.Fatalf("shape gave %d glyphs for 8 runes", len(g))
	}
	addr := uintptr(unsafe.Pointer(unsafe.StringData(fontFile)))
	perms, path, err := mappingOf(addr)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if path != exe || strings.Contains(perms, "w") {
		t.Errorf("the font's bytes (at %#x) are in a %s mapping of %q, want a read-only mapping of the program %q", addr, perms, path, exe)
	}
}

// mappingOf returns the permissions and the file of the mapping of this
// process that holds addr, from /proc/self/maps.
func mappingOf(addr uintptr) (perms, path string, err error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		var start, end uintptr
		var offset, device, inode string
		var name string
		n, _ := fmt.Sscanf(lines.Text(), "%x-%x %s %s %s %s %s", &start, &end, &perms, &offset, &device, &inode, &name)
		if n >= 6 && start <= addr && addr < end {
			return perms, name, nil
		}
	}
	if err := lines.Err(); err != nil {
		return "", "", err
	}
	return "", "", fmt.Errorf("no mapping of this process holds %#x", addr)
}
