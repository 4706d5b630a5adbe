package statedir

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// Readers are who besides core reads the state directory. The members of
// the directory's own group (on a board the broker's, the panel's and the
// workers' users) reach the bus socket and nothing else; the workers'
// group alone also reads what a turn needs: the directive, about.md, the
// faces and the workspace. The memory tree, the vault, the database, the
// tool store and every change set are core's alone.
type Readers struct {
	// WorkerGID is the workers' own group; -1 when workers run as core's
	// user (no systemd, or no worker user), and so read as core does.
	WorkerGID int
}

// NoReaders is a state directory only core reads.
var NoReaders = Readers{WorkerGID: -1}

// Want is what one entry of the state directory must be.
type Want struct {
	Path string
	Dir  bool
	// Mode is its exact permission bits, the set-group-ID bit included.
	Mode fs.FileMode
	// GID is the group it must have; -1 when its group gives nothing
	// (the directory's own is the bus's, whatever it is).
	GID int
	// Who says who besides core reads it, for a line about it.
	Who string
}

// Modes of the entries.
const (
	// rootMode lets the directory's group reach the bus socket, and the
	// workers their files, by name; nobody but core lists it.
	rootMode = 0o710
	// workerDirMode lets the workers' group list and read the
	// workspace, and gives what is made in it that group.
	workerDirMode = 0o750 | fs.ModeSetgid
	// workerFileMode lets the workers' group read a file.
	workerFileMode = 0o640
	// privateDirMode and privateFileMode are core's alone.
	privateDirMode  = 0o700
	privateFileMode = 0o600
	// socketMode lets the directory's group connect to the bus.
	socketMode = 0o660
)

// WorkerFileMode is the mode of a file the workers read, which core gives
// their group (see [Layout.WorkerFiles]); a file only core reads is
// [PrivateFileMode].
const (
	WorkerFileMode  = workerFileMode
	PrivateFileMode = privateFileMode
)

// WorkerFiles are the files of the directory a worker reads: the
// directive, about.md and the faces.
func (l Layout) WorkerFiles() []string { return []string{l.Directive(), l.About(), l.Faces()} }

// Access lists what each entry of the directory must be for r: the
// directory and the bus socket its group's to reach, what a turn needs
// the workers' to read, everything else core's alone. Core sets it at
// every start; doctor checks it.
func (l Layout) Access(r Readers) []Want {
	workerDir, workerFile, gid := Want{Dir: true, Mode: privateDirMode, GID: -1, Who: "core alone"}, Want{Mode: privateFileMode, GID: -1, Who: "core alone"}, r.WorkerGID
	if gid >= 0 {
		workerDir = Want{Dir: true, Mode: workerDirMode, GID: gid, Who: "core, and the workers' group to read"}
		workerFile = Want{Mode: workerFileMode, GID: gid, Who: "core, and the workers' group to read"}
	}
	at := func(path string, w Want) Want { w.Path = path; return w }
	wants := []Want{
		{Path: l.Root, Dir: true, Mode: rootMode, GID: -1, Who: "core; its group may reach the bus socket and, by name, what it may read"},
		{Path: l.Socket(), Mode: socketMode, GID: -1, Who: "core, and its directory's group to connect"},
		at(l.Workspace(), workerDir),
	}
	for _, f := range l.WorkerFiles() {
		wants = append(wants, at(f, workerFile))
	}
	private := Want{Dir: true, Mode: privateDirMode, GID: -1, Who: "core alone"}
	for _, dir := range []string{l.MemoryDir(), l.Vault(), l.ToolStore(), l.Changes(), l.Photos(), l.Runs()} {
		wants = append(wants, at(dir, private))
	}
	private = Want{Mode: privateFileMode, GID: -1, Who: "core alone"}
	for _, f := range []string{l.DB(), l.DB() + "-wal", l.DB() + "-shm", l.HighWater(), l.Backup(), l.Reserve(), l.Lock()} {
		wants = append(wants, at(f, private))
	}
	return wants
}

// Fault says how the entry fi differs from w, "" when it does not: a
// link or the wrong type where w's is wanted, another mode, another group.
func (w Want) Fault(fi fs.FileInfo) string {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return "it is a link"
	case fi.IsDir() != w.Dir && w.Dir:
		return "it is not a directory"
	case fi.IsDir() != w.Dir:
		return "it is a directory"
	}
	var faults []string
	if got := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSetuid | fs.ModeSticky); got != w.Mode {
		faults = append(faults, fmt.Sprintf("mode %s, want %s", octal(got), octal(w.Mode)))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && w.GID >= 0 && int(st.Gid) != w.GID {
		faults = append(faults, fmt.Sprintf("group %d, want %d", st.Gid, w.GID))
	}
	return strings.Join(faults, ", ")
}

// octal writes a mode as chmod takes it: 2750, 0700.
func octal(m fs.FileMode) string {
	bits := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return fmt.Sprintf("%04o", bits)
}

// Chmod is the mode of w as chmod takes it.
func (w Want) Chmod() string { return octal(w.Mode) }
