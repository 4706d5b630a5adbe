package giveback

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSmapsBytes bounds how much of /proc/self/smaps is read: a Go
// process of the pet's has a few dozen mappings, about a kilobyte each.
const maxSmapsBytes = 1 << 20

// unmapProgramPages drops this process's mappings of its own binary's
// read-only pages: its code, read-only data and the runtime's pc tables.
// They stay in the page cache, shared and reclaimable, and a page the
// process runs again is mapped again by a minor fault; what goes is the
// process's hold on them. The kernel maps file pages 64 KB around each
// fault (fault-around), so a pet that has run a turn maps nearly its whole
// binary although it runs a small part of it idle: on the arm64 VM core
// mapped 14.6 MB of a 15 MB binary, and the three services' Pss_File was
// half their PSS (BENCHMARKS.md). Mapped code is also what the kernel
// keeps longest under memory pressure; unmapped, the cold part goes first.
// A mapping with pages of the process's own (the data segment, or a
// read-only one the loader wrote relocations into, as in a PIE build) is
// left alone: dropping those would lose what was written.
func unmapProgramPages() error {
	// The kernel writes a mapping's path as it writes this link, " (deleted)"
	// and all once the file is replaced (an upgrade while the pet runs).
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("finding this program's file: %w", err)
	}
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		return fmt.Errorf("reading this process's mappings: %w", err)
	}
	ranges, err := cleanReadOnlyRangesOf(io.LimitReader(smaps, maxSmapsBytes), exe)
	// Closed before the pages go, not deferred: code run after them maps
	// its pages back, and holds them until the next release.
	smaps.Close()
	if err != nil {
		return fmt.Errorf("reading this process's mappings: %w", err)
	}
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("unmapping this program's pages %#x-%#x: %w", r.start, r.end, errno)
		}
	}
	return nil
}

// addressRange is a mapping's [start, end) in this process's memory.
type addressRange struct{ start, end uintptr }

// cleanReadOnlyRangesOf picks, from a /proc/PID/smaps listing, the
// private mappings of the file at path that are not writable and hold no
// anonymous page (one written since it was mapped). Every other mapping is
// never picked: its written pages would be lost.
func cleanReadOnlyRangesOf(smaps io.Reader, path string) ([]addressRange, error) {
	var ranges []addressRange
	var candidate *addressRange // the mapping being read, while it may be picked
	lines := bufio.NewScanner(smaps)
	for lines.Scan() {
		line := lines.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if strings.HasSuffix(fields[0], ":") { // a field of the mapping above
			if candidate != nil && fields[0] == "Anonymous:" && (len(fields) < 2 || fields[1] != "0") {
				candidate = nil
			}
			continue
		}
		if candidate != nil {
			ranges = append(ranges, *candidate)
			candidate = nil
		}
		// A mapping: address perms offset dev inode path, the path alone
		// holding spaces.
		if len(fields) < 6 {
			continue
		}
		perms := fields[1]
		if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue
		}
		rest := line
		for range 5 {
			rest = strings.TrimLeft(rest, " ")
			_, rest, _ = strings.Cut(rest, " ")
		}
		if strings.TrimLeft(rest, " ") != path {
			continue
		}
		from, to, found := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(from, 16, 64)
		end, err2 := strconv.ParseUint(to, 16, 64)
		if !found || err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("mapping %q: address range %q is not start-end", line, fields[0])
		}
		candidate = &addressRange{uintptr(start), uintptr(end)}
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	if candidate != nil {
		ranges = append(ranges, *candidate)
	}
	return ranges, nil
}
