package sandbox

import "io/fs"

// ChangeKind says what a captured command did to one path.
type ChangeKind string

// The kinds of change a captured run can make.
const (
	// Created: the path did not exist in the workspace and does now.
	Created ChangeKind = "created"
	// Modified: the path existed and its content, mode or link target
	// changed.
	Modified ChangeKind = "modified"
	// Deleted: the path existed and is gone.
	Deleted ChangeKind = "deleted"
	// Replaced: a directory was removed and made again, so nothing that
	// was in it before survives (overlayfs calls it opaque); the paths
	// now inside it are listed as changes of their own.
	Replaced ChangeKind = "replaced"
)

// Change is one path that a captured run changed.
type Change struct {
	// Path is slash-separated and relative to the workspace root.
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
	// Type is the file's type after the change (zero for a deletion):
	// 0 for a regular file, fs.ModeDir, or fs.ModeSymlink.
	Type fs.FileMode `json:"type"`
	// Perm is the permission bits after the change.
	Perm fs.FileMode `json:"perm,omitempty"`
	// Size is the regular file's size after the change.
	Size int64 `json:"size,omitempty"`
	// Target is a symbolic link's target after the change.
	Target string `json:"target,omitempty"`
	// Sparse marks a regular file with holes: its size is more than the
	// upper layer holds of it, and a plain copy would fill them.
	Sparse bool `json:"sparse,omitempty"`
}
