package sandbox

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"shelldon/beneath"
	"shelldon/clock"
	"shelldon/policy"
)

// The look: which blobs of a repository to mask, found by git itself in
// a container of its own, and kept while the repository's state holds
// (see gitmask.go for what is done with them).

// gitLook is what the look found in one repository.
type gitLook struct {
	// format is the repository's object format: "sha1" or "sha256".
	format string
	// masked are the blobs to mask, by object name.
	masked []string
	// replacements are the blobs git shows in their place, made once
	// for every run that keeps the look.
	replacements []gitReplacement
	// err says why the repository could not be looked through; its
	// objects are then hidden from the run.
	err error
}

// gitReplacement is the blob a masked one is replaced by.
type gitReplacement struct {
	masked, name string
	object       []byte // the loose object: compressed
}

// replace makes the replacements of the masked blobs.
func (look *gitLook) replace() error {
	look.replacements = make([]gitReplacement, 0, len(look.masked))
	var compressed bytes.Buffer
	z := zlib.NewWriter(&compressed)
	for _, masked := range look.masked {
		object, name := gitBlob(fmt.Sprintf(gitMaskedContent, masked), look.format)
		compressed.Reset()
		z.Reset(&compressed)
		z.Write(object)
		if err := z.Close(); err != nil {
			return fmt.Errorf("compress a masked blob: %w", err)
		}
		look.replacements = append(look.replacements, gitReplacement{masked: masked, name: name, object: bytes.Clone(compressed.Bytes())})
	}
	return nil
}

// gitLooks keeps each repository's look with the state it was made in.
type gitLooks struct {
	mu    sync.Mutex
	looks map[string]keptLook // by workspace and git directory
	clock clock.Clock         // nil: the system's
}

func (l *gitLooks) now() time.Time {
	if l.clock == nil {
		return time.Now()
	}
	return l.clock.Now()
}

type keptLook struct {
	state [sha256.Size]byte
	look  gitLook
	at    time.Time // when the look was made
}

// gitLookRetry is how long a failed look is kept: a look that ran out of
// time on a busy board is tried again.
const gitLookRetry = 10 * time.Minute

func (l *gitLooks) get(key string, state [sha256.Size]byte) (gitLook, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept, ok := l.looks[key]
	return kept.look, ok && kept.state == state && (kept.look.err == nil || l.now().Sub(kept.at) < gitLookRetry)
}

func (l *gitLooks) put(key string, state [sha256.Size]byte, look gitLook) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.looks == nil {
		l.looks = make(map[string]keptLook)
	}
	if _, ok := l.looks[key]; !ok && len(l.looks) >= maxCachedLooks {
		for old := range l.looks {
			delete(l.looks, old)
			break
		}
	}
	l.looks[key] = keptLook{state: state, look: look, at: l.now()}
}

// gitRepoState sums the state of the git directory rel: the name, type,
// size, times and inode of every entry, the objects' directories but not
// the objects in them (a new object or pack changes its directory).
func gitRepoState(root *beneath.Root, rel string) ([sha256.Size]byte, error) {
	h := sha256.New()
	entries := 0
	var walk func(dir string, objects bool) error
	walk = func(dir string, objects bool) error {
		list, err := root.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range list {
			if entries++; entries > maxGitStateEntries {
				return fmt.Errorf("%s holds more than %d entries besides its objects", rel, maxGitStateEntries)
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok {
				return fmt.Errorf("cannot tell the state of %s", path.Join(dir, e.Name()))
			}
			h.Write([]byte(path.Join(dir, e.Name()) + "\x00"))
			binary.Write(h, binary.LittleEndian, []int64{int64(st.Mode), st.Size, st.Mtim.Nano(), st.Ctim.Nano(), int64(st.Ino)})
			switch {
			case !e.IsDir():
			case objects && e.Name() != "info":
				// An object directory or the packs: its times say enough.
			default:
				if err := walk(path.Join(dir, e.Name()), e.Name() == "objects"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(rel, false); err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("the state of %s: %w", rel, err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, nil
}

// gitLookScript runs in the look's container: for each repository named
// (their count, then each, then the pathspecs), it prints, as records
// ended by NUL, the blobs nothing reaches and every record of history
// and of the index whose path the pathspecs match. git's errors go to a
// file, so that nothing but records reaches the output.
const gitLookScript = `set -u
export LC_ALL=C GIT_NO_REPLACE_OBJECTS=1 GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0
fail() { printf '@fail\0%s\0' "$(head -c 500 /tmp/err | tr '\0\n' '  ')"; }
look() {
	d=$1; shift
	g() { git --git-dir="$d" -c core.fsmonitor=false -c diff.relative=false -c log.showSignature=false "$@"; }
	format=$(g rev-parse --show-object-format 2>/tmp/err) || { fail; return; }
	printf '@format\0%s\0' "$format"
	g cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' >/tmp/all 2>/tmp/err || { fail; return; }
	sed -n 's/^blob //p' /tmp/all >/tmp/blobs 2>/tmp/err && sort -u -o /tmp/blobs /tmp/blobs 2>/tmp/err || { fail; return; }
	# What reaches a blob is a commit's tree (a ref's, a reflog's, HEAD's)
	# or the index: a ref to a tree or a blob names no path, so what only
	# it reaches is masked.
	g for-each-ref --format='%(objecttype):%(*objecttype):%(objectname)' >/tmp/refs 2>/tmp/err || { fail; return; }
	awk -F: '$1 == "commit" || $2 == "commit" { print $3 }' /tmp/refs >/tmp/tips 2>/tmp/err || { fail; return; }
	if g rev-parse -q --verify 'HEAD^{commit}' >>/tmp/tips 2>/tmp/err; then :; fi
	g rev-list --objects --no-object-names --reflog --indexed-objects --stdin </tmp/tips >/tmp/reached 2>/tmp/err || { fail; return; }
	sort -u -o /tmp/reached /tmp/reached 2>/tmp/err && comm -23 /tmp/blobs /tmp/reached >/tmp/unreached 2>/tmp/err || { fail; return; }
	printf '@unreached\0'
	tr '\n' '\0' </tmp/unreached
	printf '@log\0'
	g log --all --reflog --raw -z --no-abbrev -m --root --no-renames --no-relative --no-textconv --no-ext-diff --format= -- "$@" 2>/tmp/err || { fail; return; }
	printf '@index\0'
	g ls-files -s -z -- "$@" 2>/tmp/err || { fail; return; }
	for index in "$d"/worktrees/*/index; do
		[ -f "$index" ] || continue
		GIT_INDEX_FILE=$index g ls-files -s -z -- "$@" 2>/tmp/err || { fail; return; }
	done
	printf '@done\0'
}
n=$1; shift; i=0
while [ "$i" -lt "$n" ]; do eval "repo$i=\$1"; shift; i=$((i+1)); done
printf '\0@shelldon-git-look\0'
i=0
while [ "$i" -lt "$n" ]; do
	eval "d=\$repo$i"
	printf '@repo\0%s\0' "$i"
	look "/workspace/$d" "$@"
	rm -f /tmp/all /tmp/blobs /tmp/refs /tmp/tips /tmp/reached /tmp/unreached
	i=$((i+1))
done
`

// lookThroughGit runs the look over the repositories of repos at the
// indexes which, in a container of its own over the workspace and the
// mask layer as it stands (credentials masked, git's objects not yet),
// and returns what it found by index. An error means the look could not
// run at all.
func (s *Sandbox) lookThroughGit(ctx context.Context, fsys *runFS, ws string, o owner, mask string, repos []string, which []int, spec Spec, id string) (map[int]gitLook, error) {
	started := time.Now()
	view, err := fsys.overlay("git-look", []string{mask, ws}, "", "")
	if err != nil {
		return nil, err
	}
	c := container{owner: o, workspace: view}
	for _, dir := range []struct {
		name string
		to   *string
	}{{"git-look-tmp", &c.tmp}, {"git-look-var-tmp", &c.varTmp}} {
		if *dir.to, err = fsys.mkdir(dir.name, 0o1777, o); err != nil {
			return nil, err
		}
	}
	argv := []string{"/bin/sh", "-c", gitLookScript, "git-look", fmt.Sprint(len(which))}
	for _, i := range which {
		argv = append(argv, repos[i])
	}
	argv = append(argv, policy.GitCredentialPathspecs()...)
	look := Spec{Argv: argv, Workspace: ws, Turn: spec.Turn}
	lim := Limits{Output: gitLookOutput, Wall: gitLookWall, Disk: spec.Limits.Disk}.withDefaults()
	res, err := s.execute(ctx, id+"-git", look, lim, c, stdio{})
	// The look's view goes before the layer under it changes.
	if uErr := fsys.unmountOverlay(view); uErr != nil && err == nil {
		err = uErr
	}
	for _, dir := range []string{c.tmp, c.varTmp} {
		if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
			err = fmt.Errorf("git look: %w", rmErr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("look through git's history for credentials: %w", err)
	}
	found := make(map[int]gitLook, len(which))
	var why error
	switch {
	case res.TimedOut:
		why = fmt.Errorf("the look through its history took longer than %v", gitLookWall)
	case res.OutputDropped > 0:
		why = fmt.Errorf("the look through its history found more than %d MiB of records", gitLookOutput>>20)
	case res.ExitCode != 0:
		why = fmt.Errorf("the look through its history failed (exit %d)", res.ExitCode)
	}
	var parsed []gitLook
	if why == nil {
		parsed, why = parseGitLook(res.Output, len(which))
	}
	masked := 0
	for k, i := range which {
		if why != nil {
			found[i] = gitLook{err: why}
			continue
		}
		found[i] = parsed[k]
		masked += len(parsed[k].masked)
	}
	s.log.Info("looked through git's history for credentials", "run", id, "repositories", len(which),
		"masked", masked, "took", time.Since(started).Round(time.Millisecond), "err", why)
	return found, nil
}

// parseGitLook reads the look's records for n repositories. A repository
// whose records are not all there, or not as the script prints them, is
// a failed look.
func parseGitLook(out []byte, n int) ([]gitLook, error) {
	records := bytes.Split(out, []byte{0})
	start := slices.IndexFunc(records, func(r []byte) bool { return string(r) == "@shelldon-git-look" })
	if start < 0 {
		return nil, errors.New("the look printed none of its records")
	}
	records = records[start+1:]
	looks := make([]gitLook, n)
	for i := range looks {
		looks[i].err = errors.New("the look ended before it got to this repository")
	}
	for len(records) > 1 && string(records[0]) == "@repo" {
		var i int
		if _, err := fmt.Sscan(string(records[1]), &i); err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("the look printed a record for repository %q", records[1])
		}
		looks[i], records = parseGitRepoLook(records[2:])
	}
	return looks, nil
}

// parseGitRepoLook reads one repository's records and returns what they
// say and the records after them.
func parseGitRepoLook(records [][]byte) (gitLook, [][]byte) {
	var look gitLook
	masked := map[string]bool{}
	bad := func(format string, args ...any) (gitLook, [][]byte) {
		return gitLook{err: fmt.Errorf("the look printed "+format, args...)}, nil
	}
	mask := func(name, mode, where string) error {
		if !gitObjectName(name, look.format) {
			return fmt.Errorf("%q as an object name", name)
		}
		if strings.Trim(name, "0") == "" || mode == "160000" {
			return nil // no object, or a submodule's commit
		}
		if _, denied := policy.Denied(where); where == "" || denied {
			masked[name] = true
		}
		return nil
	}
	section := ""
	for len(records) > 0 {
		r := string(records[0])
		records = records[1:]
		switch {
		case r == "@fail":
			if len(records) == 0 {
				return bad("a failure without its reason")
			}
			return gitLook{err: errors.New("git failed: " + string(records[0]))}, records[1:]
		case r == "@format":
			if len(records) == 0 || (string(records[0]) != "sha1" && string(records[0]) != "sha256") {
				return bad("no object format it knows")
			}
			look.format, records = string(records[0]), records[1:]
		case r == "@unreached" || r == "@log" || r == "@index":
			if look.format == "" {
				return bad("records before the object format")
			}
			section = r
		case r == "@done":
			if section != "@index" {
				return bad("an end before all its records")
			}
			if len(masked) > maxMaskedBlobs {
				return gitLook{err: fmt.Errorf("%d of its blobs would be masked, more than the %d a run masks; `git gc --prune=now` drops those nothing reaches", len(masked), maxMaskedBlobs)}, records
			}
			for name := range masked {
				look.masked = append(look.masked, name)
			}
			slices.Sort(look.masked)
			if err := look.replace(); err != nil {
				return gitLook{err: err}, records
			}
			return look, records
		case r == "":
			// Between commits of git log -z.
		case section == "@unreached":
			if err := mask(r, "", ""); err != nil {
				return bad("%v", err)
			}
		case section == "@log":
			// ":<mode> <mode> <object> <object> <status>", then the path,
			// or two for a copy or a rename, should the configuration
			// turn their detection on after all.
			fields := strings.Fields(strings.TrimPrefix(r, ":"))
			if !strings.HasPrefix(r, ":") || len(fields) != 5 || fields[4] == "" {
				return bad("a history record %q", r)
			}
			paths := 1
			if fields[4][0] == 'R' || fields[4][0] == 'C' {
				paths = 2
			}
			if len(records) < paths {
				return bad("a history record %q without its path", r)
			}
			for _, where := range records[:paths] {
				for k := range 2 {
					if err := mask(fields[2+k], fields[k], string(where)); err != nil {
						return bad("%v", err)
					}
				}
			}
			records = records[paths:]
		case section == "@index":
			// "<mode> <object> <stage>\t<path>".
			entry, where, ok := strings.Cut(r, "\t")
			fields := strings.Fields(entry)
			if !ok || len(fields) != 3 {
				return bad("an index record %q", r)
			}
			if err := mask(fields[1], fields[0], where); err != nil {
				return bad("%v", err)
			}
		default:
			return bad("a record %q outside its sections", r)
		}
	}
	return bad("no end of its records")
}

// gitObjectName reports whether name is an object name in format.
func gitObjectName(name, format string) bool {
	size := sha1.Size
	if format == "sha256" {
		size = sha256.Size
	}
	b, err := hex.DecodeString(name)
	return err == nil && len(b) == size && name == strings.ToLower(name)
}

// gitBlob is content as a git object, uncompressed, and its name.
func gitBlob(content, format string) ([]byte, string) {
	object := []byte(fmt.Sprintf("blob %d\x00%s", len(content), content))
	var h hash.Hash = sha1.New()
	if format == "sha256" {
		h = sha256.New()
	}
	h.Write(object)
	return object, hex.EncodeToString(h.Sum(nil))
}
