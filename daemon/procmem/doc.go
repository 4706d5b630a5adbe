// Package procmem reads memory figures the Linux kernel publishes about
// this process, the machine and the process's cgroup, for reports to the
// owner (/status) and turn records. Each reader returns false where the
// kernel does not say, so callers degrade to "unknown" rather than fail.
package procmem
