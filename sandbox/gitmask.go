package sandbox

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/beneath"
	"shelldon/clock"
	"shelldon/policy"
)

// What a credential-shaped file held lives on in git's objects when the
// owner's repository tracked it, even for a moment, and the whiteouts of
// the mask hide only the working tree's copy. So for every repository in
// the workspace (a directory holding HEAD, objects and refs: .git, a
// submodule's git directory, a bare repository) the mask layer also
//
//   - replaces, for git, every blob a credential-shaped path
//     ([policy.Denied]) held anywhere in the repository's history, index,
//     stash or reflogs, and every blob no commit or index reaches, whose
//     path nobody can tell (a file staged once, then unstaged), by
//     a blob that says it is masked: a replace ref each
//     (refs/replace/<blob>), which every view of git's follows — diff,
//     show, log -p, cat-file, grep, blame, pickaxe, --text and --binary,
//     a blob named by its object name;
//   - hides the object store from every other program: the repository's
//     objects directory is an opaque one holding the masked blobs'
//     replacements and an alternates file, and the real objects are mounted read-only at a
//     path outside the workspace whose name changes every run, which git
//     reads through the alternates file. A command that reads the
//     workspace (grep -r, cat .git/objects/…, python walking the tree)
//     finds no object; one that names the real store names an absolute
//     path, which the policy asks about.
//
// Every run's git gets core.useReplaceRefs=true on its command line (the
// repository's configuration cannot turn the replacements off) and
// gc.auto=0 (an approved commit does not repack the owner's objects, nor
// pack the mask's refs into packed-refs).
//
// Which blobs to mask takes a walk through the repository's history, done
// by git itself in a container of its own over the masked workspace (the
// look) and kept, per repository, for as long as the repository's state
// — every file and directory of its git directory but the objects, whose
// directories say when objects come and go — stays the same: runs pay the
// walk only after something changed the repository.
//
// What this does not cover: git's objects as stored are still what an
// approved program reads when it opens the real store by its path (the
// alternates file names it): that is a program the owner approved, whose
// card shows it. Alternates of the owner's own (objects/info/alternates in
// the real store) are not followed in the sandbox. Git's own refusal to
// replace (git --no-replace-objects, GIT_NO_REPLACE_OBJECTS, cat-file
// --batch-all-objects) is the policy's to ask about.

// Bounds of the masks of git's history.
const (
	// maxGitRepos is how many repositories of one workspace are looked
	// through; the objects of the others are hidden from the run.
	maxGitRepos = 16
	// maxGitStateEntries bounds the entries of one git directory whose
	// state says whether its look still holds (the objects themselves
	// are not counted).
	maxGitStateEntries = 50_000
	// maxMaskedBlobs bounds the blobs one repository masks: each is a
	// replace ref every run writes. A repository with more hides its
	// objects from the run, until `git gc --prune=now` drops the blobs
	// nothing reaches.
	maxMaskedBlobs = 10_000
	// gitLookOutput is the most the look may print: a masked blob's name
	// and a credential path's record each take some tens of bytes.
	gitLookOutput = 4 << 20
	// gitLookWall is the longest the look may take.
	gitLookWall = 60 * time.Second
	// maxCachedLooks is how many repositories' looks are kept.
	maxCachedLooks = 32
)

// gitMaskedContent is what git shows of a masked blob, named in it: two
// versions of a masked file still differ, so that a diff says the file
// changed, not how.
const gitMaskedContent = "[masked by shelldon: blob %.12s, which a file named like a credential held, or which nothing in this repository's history names]\n"

// gitPlainCopies are where a git directory keeps what files held outside
// its objects, as text: the message of a `git commit -v` with the diff
// below it, the patch a stopped rebase or git am applies, the conflicted
// files rerere remembers. The mask layer hides them, as it cannot mask
// what in them a credential held: the sandbox's git then knows of no
// rebase or am in progress, and remembers no resolution.
var gitPlainCopies = []string{"COMMIT_EDITMSG", "rebase-merge/patch", "rebase-apply", "rr-cache"}

// gitReplaceConfig is every run's git configuration: replacements on
// whatever the repository says, and no automatic gc.
var gitReplaceConfig = []string{
	"GIT_CONFIG_COUNT=2",
	"GIT_CONFIG_KEY_0=core.useReplaceRefs", "GIT_CONFIG_VALUE_0=true",
	"GIT_CONFIG_KEY_1=gc.auto", "GIT_CONFIG_VALUE_1=0",
}

// gitObjectsMount is where a run finds the real object stores, under a
// directory named anew for every run.
const gitObjectsMount = "/run/shelldon-objects-"

// gitDirEntries notes, while a directory is listed, the entries that make
// it a git directory: HEAD, objects and refs.
type gitDirEntries struct{ head, objects, refs bool }

func (g *gitDirEntries) see(e fs.DirEntry) {
	switch e.Name() {
	case "HEAD":
		g.head = e.Type().IsRegular()
	case "objects":
		g.objects = e.IsDir()
	case "refs":
		g.refs = e.IsDir()
	}
}

func (g gitDirEntries) complete() bool { return g.head && g.objects && g.refs }

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

// gitMasks are what a run's mask layer says of its repositories.
type gitMasks struct {
	binds []Bind   // the real object stores, read-only
	env   []string // gitReplaceConfig, when there are repositories
	// written are the files the mask layer holds for git, by path in the
	// workspace: a captured run's changes to them are not the command's.
	written []string
	// refs are the replace refs written, by repository.
	refs map[string][]string
	// withheld are the repositories whose objects are hidden, and why.
	withheld []string
}

// maskGit looks through the repositories the mask found (a look is run
// for those whose state changed since their last) and adds their masks to
// the mask layer; it must run before the layer is mounted.
func (s *Sandbox) maskGit(ctx context.Context, fsys *runFS, ws string, o owner, mask string, repos []string, spec Spec, id string) (gitMasks, error) {
	var g gitMasks
	if len(repos) == 0 {
		return g, nil
	}
	root, err := beneath.Open(ws)
	if err != nil {
		return g, fmt.Errorf("%w: %v", ErrWorkspace, err)
	}
	defer root.Close()
	looks := make([]gitLook, len(repos))
	states := make([][sha256.Size]byte, len(repos))
	var unknown []int
	for i, rel := range repos {
		if i >= maxGitRepos {
			looks[i].err = fmt.Errorf("the workspace holds more than %d git repositories, and only the first %d are looked through for credentials", maxGitRepos, maxGitRepos)
			continue
		}
		if states[i], err = gitRepoState(root, rel); err != nil {
			looks[i].err = err
			continue
		}
		var ok bool
		if looks[i], ok = s.looks.get(ws+"\x00"+rel, states[i]); !ok {
			unknown = append(unknown, i)
		}
	}
	if len(unknown) > 0 {
		looked, err := s.lookThroughGit(ctx, fsys, ws, o, mask, repos, unknown, spec, id)
		if err != nil {
			return g, err
		}
		for _, i := range unknown {
			looks[i] = looked[i]
			s.looks.put(ws+"\x00"+repos[i], states[i], looks[i])
		}
	}
	run := make([]byte, 8)
	rand.Read(run)
	mount := gitObjectsMount + hex.EncodeToString(run)
	layer := &gitLayer{dir: mask, ws: root, touched: map[string]bool{}}
	g.env = gitReplaceConfig
	g.refs = map[string][]string{}
	for i, rel := range repos {
		look := looks[i]
		if look.err != nil {
			s.log.Warn("git's objects are hidden from this run: the sandbox could not tell which of them hold credentials",
				"repository", rel, "err", look.err)
			g.withheld = append(g.withheld, fmt.Sprintf("git's objects of %s were hidden from this run: %v", rel, look.err))
		}
		target := fmt.Sprintf("%s/%d", mount, i)
		written, err := layer.maskRepo(rel, look, target)
		if err != nil {
			return g, fmt.Errorf("mask git's objects in %s: %w", rel, err)
		}
		g.written = append(g.written, written...)
		if look.err != nil {
			continue
		}
		g.refs[rel] = look.masked
		objects, err := root.OpenDir(path.Join(rel, "objects"))
		if err != nil {
			return g, fmt.Errorf("%w: %v", ErrWorkspace, err)
		}
		// The store is mounted through the descriptor opened beneath the
		// workspace, so no link swapped in since the look leads elsewhere.
		empty, err := fsys.mkdir(fmt.Sprintf("git-empty-%d", i), 0o755, o)
		if err == nil {
			var mounted string
			mounted, err = fsys.overlay(fmt.Sprintf("git-objects-%d", i), []string{fmt.Sprintf("/proc/self/fd/%d", objects.Fd()), empty}, "", "")
			g.binds = append(g.binds, Bind{Source: mounted, Target: target})
		}
		objects.Close()
		if err != nil {
			return g, err
		}
	}
	if err := layer.restoreTimes(); err != nil {
		return g, err
	}
	return g, nil
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
	res, err := s.execute(ctx, id+"-git", look, lim, c)
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

// emptyPlainDir reports whether rel is an empty directory that is not
// opaque: one the overlay merely copied up, whose removal leaves the
// merged view as it was.
func emptyPlainDir(root *beneath.Root, rel string) (bool, error) {
	f, err := root.OpenDir(rel)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if names, err := f.Readdirnames(1); len(names) > 0 || !errors.Is(err, io.EOF) {
		return false, err
	}
	var opaque [1]byte
	_, err = unix.Fgetxattr(int(f.Fd()), xattrOpaque, opaque[:])
	return errors.Is(err, unix.ENODATA), nil
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

// gitLayer writes git's masks into a mask layer, each directory it makes
// like the workspace's it covers.
type gitLayer struct {
	dir     string        // the mask layer
	ws      *beneath.Root // the workspace
	touched map[string]bool
}

// maskRepo writes the masks of the repository rel that look found: its
// objects directory opaque, holding the masked blob and an alternates
// file that leads to objects (nothing, when the look failed), and a
// replace ref for each masked blob. It returns the paths it wrote.
func (l *gitLayer) maskRepo(rel string, look gitLook, objects string) ([]string, error) {
	for _, copied := range gitPlainCopies {
		if err := l.hide(path.Join(rel, copied)); err != nil {
			return nil, err
		}
	}
	dir := path.Join(rel, "objects")
	if err := l.mkdirAll(dir); err != nil {
		return nil, err
	}
	if err := unix.Setxattr(filepath.Join(l.dir, dir), xattrOpaque, []byte("y"), 0); err != nil {
		return nil, fmt.Errorf("make %s opaque: %w", dir, err)
	}
	if look.err != nil {
		return nil, nil
	}
	owner, err := l.ownerOf(rel)
	if err != nil {
		return nil, err
	}
	var written []string
	write := func(rel string, content []byte, perm uint32) error {
		if err := l.mkdirAll(path.Dir(rel)); err != nil {
			return err
		}
		p := filepath.Join(l.dir, rel)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Lchown(p, int(owner.uid), int(owner.gid)); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Chmod(p, perm); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		written = append(written, rel)
		return nil
	}
	if err := write(path.Join(dir, "info", "alternates"), []byte(objects+"\n"), 0o644); err != nil {
		return nil, err
	}
	for _, r := range look.replacements {
		if err := write(path.Join(dir, r.name[:2], r.name[2:]), r.object, 0o444); err != nil {
			return nil, err
		}
		if err := write(path.Join(rel, "refs", "replace", r.masked), []byte(r.name+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	return written, nil
}

// hide puts a whiteout at rel in the layer, where the workspace has
// something there.
func (l *gitLayer) hide(rel string) error {
	if _, err := l.ws.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("mask layer: %w", err)
	}
	if err := l.mkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	p := filepath.Join(l.dir, rel)
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("mask layer: %w", err)
	}
	if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
		return fmt.Errorf("hide %q: %w", rel, err)
	}
	return nil
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

// ownerOf is who owns the workspace's directory rel.
func (l *gitLayer) ownerOf(rel string) (owner, error) {
	info, err := l.ws.Lstat(rel)
	if err != nil {
		return owner{}, err
	}
	st := info.Sys().(*syscall.Stat_t)
	return owner{uid: st.Uid, gid: st.Gid}, nil
}

// mkdirAll makes the directory rel in the layer and those above it that
// the layer lacks, each with the mode and owner of the workspace's
// directory it covers, or of its parent where the workspace has none.
func (l *gitLayer) mkdirAll(rel string) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := path.Join(parts[:i+1]...)
		l.touched[sub] = true
		p := filepath.Join(l.dir, sub)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		mode := uint32(0o755)
		like := sub
		if info, err := l.ws.Lstat(sub); err == nil && info.IsDir() {
			mode = info.Sys().(*syscall.Stat_t).Mode & 0o7777
		} else {
			like = path.Dir(sub)
		}
		o, err := l.ownerOf(like)
		if err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := os.Mkdir(p, 0o700); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Lchown(p, int(o.uid), int(o.gid)); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
		if err := unix.Chmod(p, mode); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
	}
	return nil
}

// restoreTimes gives every directory the layer made or wrote into, and
// the layer's root, the times of the workspace's directory it covers:
// the topmost layer holding a directory is what the container sees of it.
func (l *gitLayer) restoreTimes() error {
	l.touched["."] = true
	for rel := range l.touched {
		info, err := l.ws.Lstat(rel)
		if err != nil || !info.IsDir() {
			continue
		}
		st := info.Sys().(*syscall.Stat_t)
		times := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(st.Mtim.Nano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(l.dir, rel), times, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("mask layer: %w", err)
		}
	}
	return nil
}

// strip takes out of a captured run's upper layer what it holds of the
// mask's own files (a replace ref pruned, the alternates file rewritten)
// and the mask's replace refs from a rewritten packed-refs: none of them
// is the command's change, and none must reach the owner's repository.
// The upper layer was the container's to write, so nothing in it is
// followed.
func (g gitMasks) strip(upper string) error {
	if len(g.written) == 0 {
		return nil
	}
	root, err := beneath.Open(upper)
	if err != nil {
		return fmt.Errorf("strip git's masks: %w", err)
	}
	defer root.Close()
	for _, rel := range g.written {
		if err := root.RemoveAll(rel); err != nil {
			return fmt.Errorf("strip git's masks: %w", err)
		}
		// A directory the mask made and the command emptied (pack-refs
		// prunes the loose refs) goes too: the workspace has none.
		for dir := path.Dir(rel); dir != "."; dir = path.Dir(dir) {
			if empty, err := emptyPlainDir(root, dir); err != nil || !empty {
				break
			}
			if err := root.Remove(dir); err != nil {
				return fmt.Errorf("strip git's masks: %w", err)
			}
		}
	}
	for repo, masked := range g.refs {
		packed := path.Join(repo, "packed-refs")
		data, err := root.ReadFile(packed, 64<<20)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("strip git's masks: %w", err)
		}
		var kept []byte
		for line := range bytes.Lines(data) {
			_, ref, _ := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
			if name, ok := bytes.CutPrefix(ref, []byte("refs/replace/")); ok && slices.Contains(masked, string(name)) {
				continue
			}
			kept = append(kept, line...)
		}
		if len(kept) != len(data) {
			info, err := root.Lstat(packed)
			if err != nil {
				return fmt.Errorf("strip git's masks: %w", err)
			}
			if err := root.WriteFile(packed, kept, info.Mode().Perm()); err != nil {
				return fmt.Errorf("strip git's masks: %w", err)
			}
		}
	}
	return nil
}
