package giveback

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCleanReadOnlyRangesOfPicksTheProgramsUnwrittenMappings: the code
// and read-only segments of the program's file, its path as the kernel
// writes it (spaces, " (deleted)"); never its writable segment, a
// read-only one with written pages (relocations in a PIE build), another
// file's mappings or anonymous memory.
func TestCleanReadOnlyRangesOfPicksTheProgramsUnwrittenMappings(t *testing.T) {
	const path = "/usr/lib/my pet/shelldon (deleted)"
	mapping := func(header string, anonymousKB int) string {
		return header + "\nSize:               7876 kB\nRss:                7308 kB\n" +
			"Anonymous:          " + strconv.Itoa(anonymousKB) + " kB\nVmFlags: rd ex mr mw me\n"
	}
	smaps := strings.Join([]string{
		mapping("00400000-00bb3000 r-xp 00000000 fe:00 10618366                           /usr/lib/my pet/shelldon (deleted)", 0),
		mapping("00bb3000-0130a000 r--p 007b3000 fe:00 10618366                           /usr/lib/my pet/shelldon (deleted)", 0),
		mapping("0130a000-0130c000 r--p 00f0a000 fe:00 10618366                           /usr/lib/my pet/shelldon (deleted)", 8),
		mapping("0130c000-013f3000 rw-p 00f0c000 fe:00 10618366                           /usr/lib/my pet/shelldon (deleted)", 204),
		mapping("013f3000-0343e000 rw-p 00000000 00:00 0 ", 148),
		mapping("b6c58000-b6c60000 rw-s 00000000 fe:00 10428926                   /var/lib/shelldon/state.db-shm", 0),
		mapping("b6c60000-b6c70000 r--p 00000000 fe:00 10428927                   /usr/lib/my pet/shelldon", 0),
		mapping("b6c70000-b6c80000 r--s 00000000 fe:00 10618366                   /usr/lib/my pet/shelldon (deleted)", 0),
		mapping("b6c80000-b6c90000 r--p 00000000 fe:00 10618366                   /usr/lib/my pet/shelldon (deleted)", 0),
	}, "")
	got, err := cleanReadOnlyRangesOf(strings.NewReader(smaps), path)
	if err != nil {
		t.Fatal(err)
	}
	want := []addressRange{{0x400000, 0xbb3000}, {0xbb3000, 0x130a000}, {0xb6c80000, 0xb6c90000}}
	if !slices.Equal(got, want) {
		t.Errorf("picked %#x, want %#x", got, want)
	}
}

// TestCleanReadOnlyRangesOfRefusesABrokenRange names the line it cannot
// read.
func TestCleanReadOnlyRangesOfRefusesABrokenRange(t *testing.T) {
	_, err := cleanReadOnlyRangesOf(strings.NewReader("00bb3000-0040zz00 r-xp 00000000 fe:00 1 /bin/pet\nAnonymous: 0 kB\n"), "/bin/pet")
	if err == nil || !strings.Contains(err.Error(), "00bb3000-0040zz00") {
		t.Errorf("err = %v, want one naming the range", err)
	}
}

// TestUnmapProgramPagesLeavesOnlyWhatRunsAfter: this test binary, which
// has mapped megabytes of itself by now, holds only the pages it runs
// after the call, and runs on.
func TestUnmapProgramPagesLeavesOnlyWhatRunsAfter(t *testing.T) {
	stopPending() // a collection an earlier test armed would map back the collector's code
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	before := readOnlyResidentKB(t, exe)
	if err := unmapProgramPages(); err != nil {
		t.Fatal(err)
	}
	after := readOnlyResidentKB(t, exe)
	t.Logf("the test binary's read-only pages resident: %d kB before, %d kB after", before, after)
	if before < 1024 || after > before/2 {
		t.Errorf("resident read-only pages of %s: %d kB before, %d kB after; want more than 1 MB before and at most half after", exe, before, after)
	}
	if err := unmapProgramPages(); err != nil { // again: nothing is left that could break
		t.Fatal(err)
	}
}

// readOnlyResidentKB sums the Rss of path's read-only private mappings in
// this process's smaps.
func readOnlyResidentKB(t *testing.T, path string) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int
	var counting bool
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		switch {
		case len(fields) >= 6 && !strings.HasSuffix(fields[0], ":"):
			counting = (fields[1] == "r-xp" || fields[1] == "r--p") && strings.HasSuffix(lines.Text(), " "+path)
		case counting && fields[0] == "Rss:":
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			total += kb
		}
	}
	return total
}
