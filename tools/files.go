package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"shelldon/beneath"
	"shelldon/contracts"
	"shelldon/policy"
)

const (
	// maxReadBytes caps what read_file returns.
	maxReadBytes = 64 << 10
	// maxListEntries caps what list_dir returns.
	maxListEntries = 500
	// maxWriteBytes caps write_file's content.
	maxWriteBytes = 256 << 10
	// maxPathBytes caps any path argument.
	maxPathBytes = 4 << 10
)

// ErrEditNotUnique is returned (wrapped) by ApplyEdit when the piece to
// replace does not occur exactly once; the message says how often it does.
var ErrEditNotUnique = errors.New("the text to replace must occur exactly once")

// ApplyEdit replaces the single occurrence of old in content with new.
// It refuses an empty old and an old that occurs zero or several times,
// so an edit never lands somewhere the model did not mean.
func ApplyEdit(content, old, new string) (string, error) {
	if old == "" {
		return "", fmt.Errorf("%w: the text to replace is empty", ErrEditNotUnique)
	}
	if n := strings.Count(content, old); n != 1 {
		return "", fmt.Errorf("%w: it occurs %d times; include more surrounding text to make it unique", ErrEditNotUnique, n)
	}
	return strings.Replace(content, old, new, 1), nil
}

// jailed resolves path in the env's jail, wrapping the refusal with the
// path as the model wrote it.
func (env Env) jailed(path string) (string, error) {
	resolved, err := beneath.Jail{Root: env.Workspace, Vault: env.Vault}.Resolve(path)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", path, err)
	}
	return resolved, nil
}

// relative is a resolved path relative to the workspace's real root,
// slash-separated; "" when it does not lie beneath it.
func (env Env) relative(resolved string) string {
	root, err := filepath.EvalSymlinks(env.Workspace)
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// openRoot resolves path in the jail and returns the workspace opened as
// an os.Root with the resolved path relative to it, so that the file is
// opened without following links out of the workspace, whatever changed
// since the check.
func (env Env) openRoot(path string) (root *os.Root, rel string, err error) {
	resolved, err := env.jailed(path)
	if err != nil {
		return nil, "", err
	}
	realRoot, err := filepath.EvalSymlinks(env.Workspace)
	if err != nil {
		return nil, "", fmt.Errorf("resolve workspace %s: %w", env.Workspace, err)
	}
	rel, err = filepath.Rel(realRoot, resolved)
	if err != nil {
		return nil, "", fmt.Errorf("path %q: %w", path, err)
	}
	root, err = os.OpenRoot(realRoot)
	if err != nil {
		return nil, "", fmt.Errorf("open workspace %s: %w", realRoot, err)
	}
	return root, rel, nil
}

var readPathParam = param{name: "path", description: "A file path relative to the workspace root, e.g. \"notes/todo.txt\".", required: true, maxBytes: maxPathBytes}

type readFile struct{ env Env }

func (readFile) Definition() contracts.ToolDefinition {
	return definition("read_file",
		"Reads a text file in the workspace and returns its content. The path is relative to the workspace root; absolute paths, .. above the root, links leading out, the vault and credential-like names (.env files, keys and certificates, SSH keys and .ssh/, names with token, secret or password) are refused. Only the first 64 KB are returned (the reply says when it was cut and the full size); a binary (non-UTF-8) file is reported by size only.",
		readPathParam)
}

func (t readFile) Check(args string) (Checked, error) {
	return t.env.checkPath("read_file", args, readPathParam, "reading")
}

// checkPath checks the arguments of tool, a FREE tool that takes one path
// in the workspace, which it is doing verb to.
func (e Env) checkPath(tool, args string, path param, verb string) (Checked, error) {
	values, err := parseArgs(args, path)
	if err != nil {
		return Checked{}, err
	}
	if _, err := e.jailed(values[path.name]); err != nil {
		return Checked{}, err
	}
	return free(tool, verb+" "+values[path.name]), nil
}

func (t readFile) Run(_ context.Context, args string) (_ string, err error) {
	values, err := parseArgs(args, readPathParam)
	if err != nil {
		return "", err
	}
	path := values["path"]
	root, rel, err := t.env.openRoot(path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	info, err := root.Lstat(rel)
	if err != nil {
		return "", fmt.Errorf("read_file %q: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("read_file %q: not a regular file (%s); use list_dir for directories", path, info.Mode().Type())
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return "", fmt.Errorf("read_file %q: %w", path, err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	info, err = f.Stat()
	if err != nil {
		return "", fmt.Errorf("read_file %q: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("read_file %q: not a regular file", path)
	}
	// One byte more than the cap says whether the file goes on.
	data, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return "", fmt.Errorf("read_file %q: %w", path, err)
	}
	cut := len(data) > maxReadBytes
	if cut {
		data = data[:maxReadBytes]
		// Do not split a UTF-8 sequence at the cut.
		for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	if !utf8.Valid(data) || slices.Contains(data, 0) {
		return fmt.Sprintf("%s is a binary file (%d bytes); its content is not shown.", path, info.Size()), nil
	}
	if cut {
		return fmt.Sprintf("%s\n[cut: showed the first %d bytes of %d]", data, len(data), info.Size()), nil
	}
	return string(data), nil
}

var listPathParam = param{name: "path", description: "A directory relative to the workspace root; empty or absent for the root itself.", maxBytes: maxPathBytes}

type listDir struct{ env Env }

func (listDir) Definition() contracts.ToolDefinition {
	return definition("list_dir",
		"Lists a directory in the workspace: one entry per line, sorted, directories ending in \"/\". The path is relative to the workspace root (empty for the root). Credential-like names (.env files, keys and certificates, SSH keys, names with token, secret or password) are left out and only counted; at most 500 entries are shown.",
		listPathParam)
}

func (t listDir) Check(args string) (Checked, error) {
	return t.env.checkPath("list_dir", args, listPathParam, "listing")
}

func (t listDir) Run(_ context.Context, args string) (string, error) {
	values, err := parseArgs(args, listPathParam)
	if err != nil {
		return "", err
	}
	path := values["path"]
	root, rel, err := t.env.openRoot(path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), filepath.ToSlash(rel))
	if err != nil {
		return "", fmt.Errorf("list_dir %q: %w", path, err)
	}
	var lines []string
	hidden := 0
	for _, e := range entries {
		if policy.DeniedName(e.Name()) {
			hidden++
			continue
		}
		name := e.Name()
		if e.IsDir() {
			name += "/"
		}
		lines = append(lines, name)
	}
	slices.Sort(lines)
	var b strings.Builder
	if len(lines) == 0 {
		b.WriteString("(empty)\n")
	}
	for i, line := range lines {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[cut: showed %d of %d entries]\n", maxListEntries, len(lines))
			break
		}
		b.WriteString(line + "\n")
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "(%d entries hidden: credential-like names)\n", hidden)
	}
	return b.String(), nil
}

var (
	writePathParam = param{name: "path", description: "The file path relative to the workspace root; missing directories are created.", required: true, maxBytes: maxPathBytes}
	contentParam   = param{name: "content", description: "The whole new content of the file (at most 256 KB).", required: true, maxBytes: maxWriteBytes}
)

type writeFile struct{ env Env }

func (writeFile) Definition() contracts.ToolDefinition {
	return definition("write_file",
		"Creates or replaces a file in the workspace with the given content (at most 256 KB). Asks the owner first, so the turn pauses for their answer. The path is relative to the workspace root; paths leaving it, the vault and credential-like names are refused. To change part of an existing file, prefer edit_file.",
		writePathParam, contentParam)
}

func (t writeFile) Check(args string) (Checked, error) {
	values, err := parseArgs(args, writePathParam, contentParam)
	if err != nil {
		return Checked{}, err
	}
	path := values["path"]
	resolved, err := t.env.jailed(path)
	if err != nil {
		return Checked{}, err
	}
	info, err := os.Stat(resolved)
	switch {
	case err == nil && info.IsDir():
		return Checked{}, fmt.Errorf("write_file %q: it is a directory", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Checked{}, fmt.Errorf("write_file %q: %w", path, err)
	}
	checked, err := judged("write_file", policy.ToolArgs{Values: values, Exists: err == nil}, "writing "+path)
	if err != nil {
		return Checked{}, err
	}
	checked.Path, checked.Content, checked.Resolved = path, values["content"], t.env.relative(resolved)
	return checked, nil
}

var (
	editPathParam = param{name: "path", description: "The file path relative to the workspace root.", required: true, maxBytes: maxPathBytes}
	oldParam      = param{name: "old", description: "The exact text to replace; it must occur exactly once in the file, so include enough surrounding lines.", required: true, maxBytes: maxWriteBytes}
	newParam      = param{name: "new", description: "The text to put in its place.", required: true, maxBytes: maxWriteBytes}
)

type editFile struct{ env Env }

func (editFile) Definition() contracts.ToolDefinition {
	return definition("edit_file",
		"Replaces one exact piece of text in a workspace file. Asks the owner first, so the turn pauses for their answer. \"old\" must occur exactly once in the file, character for character (whitespace included); otherwise nothing changes and the reply says how many times it occurs.",
		editPathParam, oldParam, newParam)
}

func (t editFile) Check(args string) (Checked, error) {
	values, err := parseArgs(args, editPathParam, oldParam, newParam)
	if err != nil {
		return Checked{}, err
	}
	if values["old"] == "" {
		return Checked{}, fmt.Errorf("%w: field \"old\" is empty; it must hold the exact text to replace", ErrBadArgs)
	}
	path := values["path"]
	resolved, err := t.env.jailed(path)
	if err != nil {
		return Checked{}, err
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return Checked{}, fmt.Errorf("edit_file %q: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return Checked{}, fmt.Errorf("edit_file %q: not a regular file", path)
	}
	checked, err := judged("edit_file", policy.ToolArgs{Values: values}, "editing "+path)
	if err != nil {
		return Checked{}, err
	}
	checked.Path, checked.Old, checked.New = path, values["old"], values["new"]
	return checked, nil
}
