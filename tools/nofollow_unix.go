//go:build unix

package tools

import "syscall"

// noFollow makes the final open refuse a link swapped in after the check.
const noFollow = syscall.O_NOFOLLOW
