package launch

import (
	"context"
	"time"
)

// Spec says what to start for one turn.
type Spec struct {
	Turn string
	// Argv is the whole command line of the worker.
	Argv []string
	Env  []string
	// Reap is R: the worker is killed this long after it starts, wherever
	// it is, so a wedged worker can never hold the turn slot.
	Reap time.Duration
	// Description is a line for whoever lists running workers.
	Description string
	Limits      Limits
}

// Limits bound one worker's resources.
type Limits struct {
	// Data is RLIMIT_DATA in bytes, the private writable memory a process
	// may map; 0 leaves it alone. It bounds a Go program's heap where
	// RLIMIT_AS cannot: the Go runtime reserves most of a gigabyte of
	// address space it never touches, but maps heap arenas writable only
	// as the heap grows. The systemd launcher applies it only when Memory
	// is 0, since the cgroup's limit is the truer bound.
	Data int64
	// CPUSeconds is RLIMIT_CPU; 0 leaves it alone.
	CPUSeconds int
	// OpenFiles is RLIMIT_NOFILE; 0 leaves it alone.
	OpenFiles int
	// Memory is the cgroup's memory.max in bytes (swap is then off); 0
	// leaves it alone. Only the systemd launcher can enforce it.
	Memory int64
	// CPUQuota is the CPU time the worker may use per second of wall
	// time (500ms is half a CPU); 0 leaves it alone. systemd launcher only.
	CPUQuota time.Duration
	// Tasks bounds the worker's processes and threads; 0 leaves it alone.
	// systemd launcher only.
	Tasks int
}

// How a worker ended, in systemd's words so that every launcher reports alike.
const (
	ResultSuccess  = "success"
	ResultExitCode = "exit-code"
	ResultSignal   = "signal"
	ResultTimeout  = "timeout"
	ResultOOMKill  = "oom-kill"
)

// Exit is how a worker ended.
type Exit struct {
	// Result is one of the Result* constants.
	Result string
	// Code is the exit status, or the signal number for ResultSignal.
	Code     int
	Duration time.Duration
	// MemoryPeak is the most memory the worker held, in bytes; 0 when the
	// launcher could not tell. Where systemd does not report it (before
	// v255), the systemd launcher samples the cgroup's memory.peak while
	// the unit runs, which misses at most the last poll interval. The
	// child launcher cannot tell.
	MemoryPeak int64
	// CPUTime is the CPU time the worker used; 0 when the launcher could
	// not tell.
	CPUTime time.Duration
}

// Launcher starts workers.
type Launcher interface {
	// Name says which launcher this is, for the log and `shelldon doctor`.
	Name() string
	// Start starts the worker of one turn. An error means nothing is running.
	Start(ctx context.Context, spec Spec) (Handle, error)
}

// Handle is one started worker.
type Handle interface {
	// PID is the worker's main process.
	PID() int
	// Owns reports whether pid belongs to this worker, so core can check
	// the credentials of a connection that claims to be it.
	Owns(pid int) bool
	// Done yields exactly one Exit, when the worker and everything it
	// started are gone.
	Done() <-chan Exit
	// Kill ends the worker now; Done still reports it.
	Kill()
}
