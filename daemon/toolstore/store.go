package toolstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"shelldon/beneath"
	"shelldon/contracts"
	"shelldon/daemon/selfcode"
)

// The store's directories.
const (
	liveDir       = "live"
	stagingDir    = "staging"
	quarantineDir = "quarantine"
	runDir        = "run"
)

// MaxFileBytes caps a tool's module and its test, each.
const MaxFileBytes = 64 << 10

// maxManifestBytes caps a manifest: a description and a schema.
const maxManifestBytes = 64 << 10

var (
	// ErrNoTool is wrapped when no tool of that name is where it is
	// looked for.
	ErrNoTool = errors.New("no such tool")
	// ErrTampered is wrapped when a tool's files are not what its
	// manifest says was kept.
	ErrTampered = errors.New("the tool's files are not what was kept")
	// ErrBadName is wrapped for a name no tool can have.
	ErrBadName = errors.New("not a tool's name")
)

// stemPattern is what a tool's name looks like: an importable module
// name, as package selfcode makes them.
var stemPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]{0,63}$`) })

// idPattern is what the name of a staging or run directory looks like.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]{1,32}$`) })

func checkName(name string) error {
	if !stemPattern().MatchString(name) || strings.HasPrefix(name, "test_") {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

// Manifest describes a live tool; it lies beside the module as
// <name>.json, and is written last, so a tool is live only once all of it
// is there.
type Manifest struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Schema      map[string]any `json:"params_schema"`
	// SHA256 and TestSHA256 are the hashes of the module and the test as
	// they were kept.
	SHA256     string `json:"sha256"`
	TestSHA256 string `json:"test_sha256"`
	PromotedAt string `json:"promoted_at"`
	PromotedBy string `json:"promoted_by"`
}

// Definition is the tool as the model is offered it.
func (m Manifest) Definition() contracts.ToolDefinition {
	schema := m.Schema
	if schema == nil {
		schema = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return contracts.ToolDefinition{Name: m.Name, Description: m.Description, ParamsSchema: schema, Tier: contracts.TierFree}
}

// Tool is a live tool as loaded and verified.
type Tool struct {
	Manifest
	Module, Test []byte
}

// Digest names a live version: its manifest's hashes of module and test.
func (t Tool) Digest() string { return t.SHA256 + ":" + t.TestSHA256 }

// Store is the tool store in one directory.
type Store struct {
	root *beneath.Root

	// verified holds, by name, the manifest of each live tool that
	// passed its check, with the stamps its three files had: a turn's
	// offer lists the live tools and re-reads only those whose files
	// changed since.
	mu       sync.Mutex
	verified map[string]verifiedTool
}

// verifiedTool is a live tool's manifest as checked, and the stamps of
// its module, test and manifest before that check.
type verifiedTool struct {
	stamps   [3]fileStamp
	manifest Manifest
}

// fileStamp tells one version of a file from another without reading
// it. The change time moves with every write, rename and change of mode,
// and nothing can set it back, so a file rewritten in place with its
// size and modification time put back still gets a new stamp. (It moves
// in the kernel's coarse ticks, a few milliseconds: a same-size rewrite
// within the tick of the check is not seen here; the call itself loads
// and checks the tool again, so such a file is never run.)
type fileStamp struct {
	dev, ino     uint64
	mode         uint32
	size         int64
	mtime, ctime syscall.Timespec
}

// stampOf is the stamp of a file as [beneath.Root.ReadDir] described it;
// the zero stamp, which no file has, when there is no such file.
func stampOf(info fs.FileInfo) fileStamp {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}
	}
	return fileStamp{dev: st.Dev, ino: st.Ino, mode: st.Mode, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// Open opens the store in dir, making it (mode 0700: it is core's alone)
// and its directories when they are missing.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open the tool store: %w", err)
	}
	root, err := beneath.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open the tool store: %w", err)
	}
	for _, d := range []string{liveDir, stagingDir, quarantineDir, runDir} {
		if err := root.MkdirAll(d, 0o700); err != nil {
			root.Close()
			return nil, fmt.Errorf("open the tool store: %w", err)
		}
	}
	return &Store{root: root, verified: map[string]verifiedTool{}}, nil
}

// Close closes the store.
func (s *Store) Close() error { return s.root.Close() }

// Dir is the store's directory on the host.
func (s *Store) Dir() string { return s.root.Path() }

func files(name string) (module, test, manifest string) {
	return name + ".py", "test_" + name + ".py", name + ".json"
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// load reads the tool name in dir and checks its files against its
// manifest.
func (s *Store) load(dir, name string) (Tool, error) {
	if err := checkName(name); err != nil {
		return Tool{}, err
	}
	module, test, manifest := files(name)
	raw, err := s.root.ReadFile(dir+"/"+manifest, maxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Tool{}, fmt.Errorf("tool %s: %w", name, ErrNoTool)
	}
	if err != nil {
		return Tool{}, fmt.Errorf("tool %s: %w: its manifest: %w", name, ErrTampered, err)
	}
	var t Tool
	if err := json.Unmarshal(raw, &t.Manifest); err != nil || t.Name != name {
		return Tool{}, fmt.Errorf("tool %s: %w: its manifest does not read as this tool's", name, ErrTampered)
	}
	if t.Module, err = s.root.ReadFile(dir+"/"+module, MaxFileBytes); err != nil {
		return Tool{}, fmt.Errorf("tool %s: %w: its module: %w", name, ErrTampered, err)
	}
	if t.Test, err = s.root.ReadFile(dir+"/"+test, MaxFileBytes); err != nil {
		return Tool{}, fmt.Errorf("tool %s: %w: its test: %w", name, ErrTampered, err)
	}
	if sum(t.Module) != t.SHA256 {
		return Tool{}, fmt.Errorf("tool %s: %w: its module's hash is %s, the manifest says %s", name, ErrTampered, sum(t.Module)[:12], short(t.SHA256))
	}
	if sum(t.Test) != t.TestSHA256 {
		return Tool{}, fmt.Errorf("tool %s: %w: its test's hash is %s, the manifest says %s", name, ErrTampered, sum(t.Test)[:12], short(t.TestSHA256))
	}
	return t, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "nothing"
	}
	return h
}

// Load reads the live tool name, verified.
func (s *Store) Load(name string) (Tool, error) { return s.load(liveDir, name) }

// Problem is a live tool that failed its check.
type Problem struct {
	Name string
	Err  error
}

// Live lists the manifests of the live tools that pass their check, by
// name; the ones that do not are returned as problems, for core to put
// away. A tool whose files have the stamps they had when it last passed
// is not read again (see [fileStamp]).
func (s *Store) Live() (live []Manifest, bad []Problem) {
	entries, err := s.root.ReadDir(liveDir)
	if err != nil {
		return nil, nil
	}
	stamps := make(map[string]fileStamp, len(entries))
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			stamps[e.Name()] = stampOf(info)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool)
	for _, name := range toolNames(entries, ".json") {
		seen[name] = true
		mod, tst, man := files(name)
		now := [3]fileStamp{stamps[mod], stamps[tst], stamps[man]}
		if v, ok := s.verified[name]; ok && v.stamps == now {
			live = append(live, v.manifest)
			continue
		}
		t, err := s.Load(name)
		if err != nil {
			delete(s.verified, name)
			bad = append(bad, Problem{Name: name, Err: err})
			continue
		}
		s.verified[name] = verifiedTool{stamps: now, manifest: t.Manifest}
		live = append(live, t.Manifest)
	}
	for name := range s.verified {
		if !seen[name] {
			delete(s.verified, name)
		}
	}
	return live, bad
}

// forget drops what Live knew of name: the store itself changed the
// tool's files. Their stamps would mostly tell as much, but a replaced
// file's inode number is free again, and a new file of the same size may
// get it within the same tick of the change time.
func (s *Store) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.verified, name)
}

// names lists the tools in dir by the files ending in suffix; unreadable
// or odd entries are left out (the loader says why when it meets them).
func (s *Store) names(dir, suffix string) []string {
	entries, err := s.root.ReadDir(dir)
	if err != nil {
		return nil
	}
	return toolNames(entries, suffix)
}

// toolNames is the names of the tools among entries, by the files ending
// in suffix.
func toolNames(entries []fs.DirEntry, suffix string) []string {
	var out []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), suffix)
		if ok && checkName(name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// Keep makes a tool live with exactly module and test, m saying what it
// is; the hashes are the store's own. Its files replace a live version's,
// the manifest last.
func (s *Store) Keep(m Manifest, module, test []byte) error {
	if err := checkName(m.Name); err != nil {
		return err
	}
	if len(module) > MaxFileBytes || len(test) > MaxFileBytes {
		return fmt.Errorf("keep %s: over the %d KiB a file may hold", m.Name, MaxFileBytes>>10)
	}
	m.SHA256, m.TestSHA256 = sum(module), sum(test)
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("keep %s: %w", m.Name, err)
	}
	defer s.forget(m.Name)
	mod, tst, man := files(m.Name)
	// The old manifest first: while the files change, no version is live.
	if err := s.root.Remove(liveDir + "/" + man); err != nil {
		return fmt.Errorf("keep %s: %w", m.Name, err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{mod, module}, {tst, test}, {man, append(manifest, '\n')}} {
		if err := s.root.WriteFile(liveDir+"/"+f.name, f.data, 0o600); err != nil {
			return fmt.Errorf("keep %s: %w", m.Name, err)
		}
	}
	return nil
}

// move moves the tool name from one directory to another: the manifest
// first when it leaves the live tools (it stops being offered at once),
// last when it arrives there (it is offered only once whole).
func (s *Store) move(name, from, to string) error {
	defer s.forget(name)
	mod, tst, man := files(name)
	order := []string{man, mod, tst}
	if to == liveDir {
		order = []string{mod, tst, man}
	}
	for _, f := range order {
		if err := s.root.Rename(from+"/"+f, to+"/"+f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("move %s to %s: %w", name, to, err)
		}
	}
	return nil
}

// Quarantine puts the live tool name away.
func (s *Store) Quarantine(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if _, err := s.root.Lstat(liveDir + "/" + name + ".json"); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("quarantine %s: %w", name, ErrNoTool)
	}
	return s.move(name, liveDir, quarantineDir)
}

// Restore brings the quarantined tool name back, if its files are still
// what was kept.
func (s *Store) Restore(name string) error {
	if _, err := s.load(quarantineDir, name); err != nil {
		return err
	}
	return s.move(name, quarantineDir, liveDir)
}

// Staged is a proposal written into a staging directory of its own for
// its gate.
type Staged struct {
	// Dir is the directory on the host, which the gate's sandbox sees as
	// its workspace; it holds <stem>.py, test_<stem>.py and, for an
	// update, the live version's test as LiveTestFile.
	Dir  string
	Stem string
	// Live is the digest of the live version the proposal updates, ""
	// for a new tool.
	Live  string
	store *Store
	rel   string
}

// LiveTestFile is the name, in a staging directory, of the live
// version's test, which an update must keep.
const LiveTestFile = selfcode.LiveTestFile

// Stage writes a proposal into a fresh staging directory: its module and
// test, and the live version's test when the proposal updates a tool.
func (s *Store) Stage(id, stem, module, test string) (Staged, error) {
	if err := checkName(stem); err != nil {
		return Staged{}, err
	}
	if !idPattern().MatchString(id) {
		return Staged{}, fmt.Errorf("stage %s: %w: the staging id %q", stem, ErrBadName, id)
	}
	st := Staged{Stem: stem, store: s, rel: stagingDir + "/" + id}
	st.Dir = filepath.Join(s.Dir(), st.rel)
	if err := s.root.MkdirAll(st.rel, 0o755); err != nil {
		return Staged{}, fmt.Errorf("stage %s: %w", stem, err)
	}
	mod, tst, _ := files(stem)
	contents := map[string]string{mod: module, tst: test}
	if live, err := s.Load(stem); err == nil {
		contents[LiveTestFile] = string(live.Test)
		st.Live = live.Digest()
	}
	for name, data := range contents {
		// World-readable: the gate's container may run as another user.
		if err := s.root.WriteFile(st.rel+"/"+name, []byte(data), 0o644); err != nil {
			st.Discard()
			return Staged{}, fmt.Errorf("stage %s: %w", stem, err)
		}
	}
	return st, nil
}

// Discard removes the staging directory.
func (st Staged) Discard() error {
	if st.store == nil {
		return nil
	}
	return st.store.root.RemoveAll(st.rel)
}

// LiveDigest is the digest of the live version of name, "" when there is
// none that passes its check.
func (s *Store) LiveDigest(name string) string {
	t, err := s.Load(name)
	if err != nil {
		return ""
	}
	return t.Digest()
}

// Prepare puts the live tool's module, verified, alone in a fresh
// directory for one run, to be shown read-only to the sandbox: the run
// imports exactly the bytes that were checked. Done removes it.
func (s *Store) Prepare(id string, t Tool) (dir string, done func(), err error) {
	if !idPattern().MatchString(id) {
		return "", nil, fmt.Errorf("prepare %s: %w: the run id %q", t.Name, ErrBadName, id)
	}
	rel := runDir + "/" + id
	if err := s.root.MkdirAll(rel, 0o755); err != nil {
		return "", nil, fmt.Errorf("prepare %s: %w", t.Name, err)
	}
	done = func() { s.root.RemoveAll(rel) }
	mod, _, _ := files(t.Name)
	if err := s.root.WriteFile(rel+"/"+mod, t.Module, 0o644); err != nil {
		done()
		return "", nil, fmt.Errorf("prepare %s: %w", t.Name, err)
	}
	return filepath.Join(s.Dir(), rel), done, nil
}

// Sweep removes what a stopped core left in staging and in the run
// directory.
func (s *Store) Sweep() error {
	var errs []error
	for _, d := range []string{stagingDir, runDir} {
		entries, err := s.root.ReadDir(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			errs = append(errs, s.root.RemoveAll(d+"/"+e.Name()))
		}
	}
	return errors.Join(errs...)
}

// State says where a tool stands.
type State string

// The states a listed tool is in.
const (
	Live        State = "live"        // offered to the model
	Gating      State = "gating"      // a proposal under its gate
	Quarantined State = "quarantined" // put away after failing
)

// Listed is one tool the store holds.
type Listed struct {
	Name  string
	State State
}

// List says what the store holds, live tools first, then proposals under
// their gate, then quarantined tools, each by name. It is for people: a
// tool is listed by its manifest, whether or not its files pass their
// check.
func (s *Store) List() []Listed {
	var out []Listed
	for _, n := range s.names(liveDir, ".json") {
		out = append(out, Listed{Name: n, State: Live})
	}
	var gating []string
	if entries, err := s.root.ReadDir(stagingDir); err == nil {
		for _, e := range entries {
			for _, n := range s.names(stagingDir+"/"+e.Name(), ".py") {
				gating = append(gating, n)
			}
		}
	}
	slices.Sort(gating)
	for _, n := range slices.Compact(gating) {
		out = append(out, Listed{Name: n, State: Gating})
	}
	for _, n := range s.names(quarantineDir, ".json") {
		out = append(out, Listed{Name: n, State: Quarantined})
	}
	return out
}

// ListDir lists the store in dir without making or changing anything, for
// a command that only reads: nothing when there is no store, an error
// when there is one this user may not read (it is core's, mode 0700).
func ListDir(dir string) ([]Listed, error) {
	root, err := beneath.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the tool store: %w", err)
	}
	defer root.Close()
	// List skips what it cannot read, as core's /tools should; a person
	// asking must not take an unreadable store for an empty one.
	for _, d := range []string{liveDir, stagingDir, quarantineDir} {
		if _, err := root.ReadDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read the tool store: %w", err)
		}
	}
	return (&Store{root: root}).List(), nil
}
