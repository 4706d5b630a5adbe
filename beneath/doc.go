// Package beneath reads, writes, makes directories, renames and removes
// beneath a root directory without ever following a symbolic link on the
// way.
//
// Core runs as root and writes into the workspace, a directory that a
// sandboxed command driven by the model can change too. That command can
// plant a link, tools-staging -> /etc, and an os.WriteFile of
// tools-staging/passwd would then write /etc/passwd as root. Checking the
// path first does not help: the command can swap a directory for a link
// between the check and the write. So a [Root] holds a descriptor of its
// directory and resolves every path from there in the kernel, at the
// moment it is used, refusing a link anywhere in the path with [ErrLink].
// An absolute path, or one with "..", is refused before that with
// [ErrOutside].
//
// Paths are opened with openat2(2) and RESOLVE_BENEATH,
// RESOLVE_NO_SYMLINKS and RESOLVE_NO_MAGICLINKS. Where openat2 is missing
// (Linux before 5.6) or a seccomp filter forbids it, paths are walked a
// name at a time with openat(2) and O_NOFOLLOW instead; which, is decided
// once per process. Changes are made with the *at calls (mkdirat,
// unlinkat, renameat) on a directory opened that way, naming a single
// last component, which those calls never follow: a link there is
// replaced, removed or renamed itself.
//
// The root directory itself is configuration, and may be given through
// links.
//
// A path the model names is resolved first by a [Jail]: it follows the
// links that stay in the workspace (a tool may read through one), refuses
// those that leave it, and refuses what the deny list of package policy
// names (the vault, credential-shaped names). Its answer, a path with no
// link left in it, is then opened through a [Root], which follows none:
// a link planted between the two is refused, not followed.
package beneath
