package approved

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/approval"
	"shelldon/daemon/fetch"
	"shelldon/policy"
	"shelldon/sandbox"
	"shelldon/testhost"
	"shelldon/tools"
)

// box is a sandbox that runs nothing: each run makes the change set that
// writes says (path → content) over the workspace, as a command that
// wrote them would have left it, and counts the runs.
type box struct {
	t      testing.TB
	writes map[string]string
	exit   int
	err    error
	runs   []sandbox.Spec
	// reads counts the guard's runs that read the tests' syntax.
	reads int
}

func (b *box) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	if b.err != nil {
		return sandbox.Result{}, b.err
	}
	if spec.View == sandbox.ReadOnly {
		// The guard reading the tests' syntax: the host's Python reads
		// the workspace as the image's would, and the binds where they
		// are on the host.
		b.reads++
		argv := slices.Clone(spec.Argv)
		for i, arg := range argv {
			for _, bind := range spec.Binds {
				if rest, ok := strings.CutPrefix(arg, bind.Target+"/"); ok {
					argv[i] = filepath.Join(bind.Source, rest)
				}
			}
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = spec.Workspace
		out, err := cmd.Output()
		if err != nil {
			return sandbox.Result{}, err
		}
		for _, bind := range spec.Binds { // named as the container sees them
			out = bytes.ReplaceAll(out, []byte(bind.Source+"/"), []byte(bind.Target+"/"))
		}
		return sandbox.Result{Output: out}, nil
	}
	b.runs = append(b.runs, spec)
	upper := filepath.Join(b.t.TempDir(), "upper")
	for rel, content := range b.writes {
		p := filepath.Join(upper, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	if err := os.MkdirAll(upper, 0o755); err != nil {
		b.t.Fatal(err)
	}
	cs, err := sandbox.OpenKept(upper, spec.Workspace)
	if err != nil {
		b.t.Fatal(err)
	}
	return sandbox.Result{ExitCode: b.exit, Output: []byte("done\n"), Changes: cs}, nil
}

// carry carries out req as the authority does: verified, then run.
func carry(r *Runner, ctx context.Context, req approval.Request) approval.Result {
	v, err := approval.Verify(r, req)
	if err != nil {
		return approval.Refusal(err)
	}
	return r.Run(ctx, v)
}

// applyKept applies the kept change set of req as the authority does:
// verified, then applied.
func applyKept(r *Runner, ctx context.Context, req approval.Request) approval.Report {
	v, err := approval.Verify(r, req)
	if err != nil {
		return approval.Report{Err: err}
	}
	return r.ApplyKept(ctx, v)
}

// rig is a runner over a fresh workspace, with the built-in tools.
type rig struct {
	t   testing.TB
	ws  string
	reg *tools.Registry
	r   *Runner
	box *box
}

func newRig(t testing.TB) *rig {
	ws, vault := t.TempDir(), t.TempDir()
	reg := tools.Builtins(tools.Env{Workspace: ws, Vault: vault, Clock: clock.NewFake(time.Now())})
	b := &box{t: t}
	return &rig{t: t, ws: ws, reg: reg, box: b,
		r: &Runner{Workspace: ws, Vault: vault, Kept: t.TempDir(), Sandbox: b, Tools: reg, Log: slog.New(slog.DiscardHandler)}}
}

// approved is the request core parks for call, with the digest of what
// the owner was shown: the call as checked now.
func (g *rig) approved(name string, args map[string]string) approval.Request {
	g.t.Helper()
	raw, _ := json.Marshal(args)
	call := contracts.ToolCall{ID: "c1", Name: name, Args: string(raw)}
	tool, ok := g.reg.Lookup(name)
	if !ok {
		g.t.Fatalf("no tool %s", name)
	}
	checked, err := tool.Check(call.Args)
	if err != nil {
		g.t.Fatal(err)
	}
	return approval.Request{Key: "t1", Kind: approval.Call, Digest: approval.CallDigest(name, checked, ""), Call: &approval.CallPayload{Call: call}}
}

func (g *rig) file(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(g.ws, rel))
	return string(b), err == nil
}

// TestAnApprovedCallRunsOnlyAsTheOwnerSawIt is the attack: the owner
// approved one command, and the request carried out names another (a row
// changed while it waited, or a call whose check now makes something
// else). Nothing runs, and the result says why.
func TestAnApprovedCallRunsOnlyAsTheOwnerSawIt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tool      string
		shown, is map[string]string
	}{
		{"command", "run_shell", map[string]string{"command": "touch shown.txt"}, map[string]string{"command": "rm -rf notes"}},
		{"write", "write_file", map[string]string{"path": "a.txt", "content": "shown"}, map[string]string{"path": "a.txt", "content": "other"}},
		{"git", "git", map[string]string{"args": "status"}, map[string]string{"args": "push origin main"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			g.box.writes = map[string]string{"ran.txt": "x"}
			req := g.approved(tc.tool, tc.shown)
			req.Call = g.approved(tc.tool, tc.is).Call
			res := carry(g.r, context.Background(), req)
			if !res.Changed || !strings.Contains(res.Answer, "nothing ran") {
				t.Errorf("Call = %+v, want nothing run, as changed", res)
			}
			if len(g.box.runs) != 0 {
				t.Errorf("the sandbox ran %d times", len(g.box.runs))
			}
			if _, ok := g.file("a.txt"); ok {
				t.Error("a.txt was written")
			}
		})
	}
}

// TestAnApprovedCallThatNoLongerChecksDoesNotRun: a tool that is gone, a
// call that no longer passes its check, and one that no longer needs the
// owner are each refused without running.
func TestAnApprovedCallThatNoLongerChecksDoesNotRun(t *testing.T) {
	g := newRig(t)
	for _, tc := range []struct {
		call contracts.ToolCall
		want string
	}{
		{contracts.ToolCall{Name: "launch_rocket", Args: "{}"}, "no tool"},
		{contracts.ToolCall{Name: "write_file", Args: `{"path":"../out.txt","content":"x"}`}, "no longer passes"},
		{contracts.ToolCall{Name: "run_shell", Args: `{"command":"ls"}`}, "does not need the owner"},
	} {
		res := carry(g.r, context.Background(), approval.Request{Key: "t1", Kind: approval.Call, Digest: "d", Call: &approval.CallPayload{Call: tc.call}})
		if !strings.Contains(res.Answer, tc.want) || res.Applied != nil {
			t.Errorf("Call(%s %s) = %+v, want %q", tc.call.Name, tc.call.Args, res, tc.want)
		}
	}
	if len(g.box.runs) != 0 {
		t.Errorf("the sandbox ran %d times", len(g.box.runs))
	}
}

// TestApprovedWritesAndEdits: an approved write and edit change the file
// beneath the workspace; an edit whose text is not there changes nothing.
func TestApprovedWritesAndEdits(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	if res := carry(g.r, ctx, g.approved("write_file", map[string]string{"path": "notes/a.txt", "content": "one two"})); !strings.Contains(res.Answer, "wrote 7 bytes") {
		t.Fatalf("write = %+v", res)
	}
	if res := carry(g.r, ctx, g.approved("edit_file", map[string]string{"path": "notes/a.txt", "old": "two", "new": "three"})); !strings.Contains(res.Answer, "wrote") {
		t.Fatalf("edit = %+v", res)
	}
	if got, _ := g.file("notes/a.txt"); got != "one three" {
		t.Fatalf("notes/a.txt = %q, want the edit", got)
	}
	if res := carry(g.r, ctx, g.approved("edit_file", map[string]string{"path": "notes/a.txt", "old": "one", "new": "four"})); !strings.Contains(res.Answer, "wrote") {
		t.Fatalf("edit = %+v", res)
	}
	// The text went since the call was approved.
	req := g.approved("edit_file", map[string]string{"path": "notes/a.txt", "old": "four", "new": "five"})
	os.WriteFile(filepath.Join(g.ws, "notes/a.txt"), []byte("none of it"), 0o644)
	if res := carry(g.r, ctx, req); !strings.HasPrefix(res.Answer, "error:") {
		t.Errorf("an edit of text that is not there = %+v, want an error", res)
	}
	if got, _ := g.file("notes/a.txt"); got != "none of it" {
		t.Errorf("notes/a.txt = %q, want it untouched", got)
	}
}

// TestAWriteThroughALinkIsRefused: a link planted in the workspace after
// the owner approved a write does not carry the write out of it.
func TestAWriteThroughALinkIsRefused(t *testing.T) {
	g := newRig(t)
	req := g.approved("write_file", map[string]string{"path": "out/a.txt", "content": "x"})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(g.ws, "out")); err != nil {
		t.Fatal(err)
	}
	res := carry(g.r, context.Background(), req)
	if !strings.Contains(res.Answer, "error") {
		t.Errorf("Call = %+v, want it refused", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "a.txt")); err == nil {
		t.Error("the write went through the link")
	}
}

// TestAnApprovedCommandsChangesAreApplied: a command's plain changes are
// applied at once, and reported to the owner and the model.
func TestAnApprovedCommandsChangesAreApplied(t *testing.T) {
	g := newRig(t)
	g.box.writes = map[string]string{"made.txt": "made"}
	res := carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "echo made > made.txt"}))
	if res.Applied == nil || len(res.Applied.Applied) != 1 || res.Kept != nil || !strings.Contains(res.Answer, "exit 0") {
		t.Fatalf("Call = %+v, want made.txt applied", res)
	}
	if got, _ := g.file("made.txt"); got != "made" {
		t.Errorf("made.txt = %q", got)
	}
	if spec := g.box.runs[0]; spec.View != sandbox.Captured || spec.Network {
		t.Errorf("ran %+v, want a captured view without network", spec)
	}
}

// TestAnApprovedCommandThatChangedNothingSaysSo and one the sandbox could
// not run.
func TestAnApprovedCommandThatChangedNothingOrCouldNotRun(t *testing.T) {
	g := newRig(t)
	req := g.approved("run_shell", map[string]string{"command": "touch x"})
	if res := carry(g.r, context.Background(), req); res.Applied != nil || !strings.Contains(res.Answer, "done") {
		t.Errorf("Call = %+v, want the output and nothing applied", res)
	}
	g.box.err = errors.New("no image")
	if res := carry(g.r, context.Background(), req); !strings.Contains(res.Answer, "could not run it: no image") {
		t.Errorf("Call = %+v, want the sandbox's error", res)
	}
	g.r.Sandbox, g.r.NoSandbox = nil, errors.New("no systemd-nspawn")
	if res := carry(g.r, context.Background(), req); !strings.Contains(res.Answer, "no systemd-nspawn") {
		t.Errorf("Call = %+v, want why commands cannot run", res)
	}
}

// TestAGitFetchIsFencedAsOutside: what a command that reached the network
// printed is the remote's, fenced, and the result says where it came from.
func TestAGitFetchIsFencedAsOutside(t *testing.T) {
	g := newRig(t)
	res := carry(g.r, context.Background(), g.approved("git", map[string]string{"args": "fetch origin"}))
	if !g.box.runs[0].Network || !strings.HasPrefix(res.Outside, "the remote of ") || !strings.Contains(res.Answer, "BEGIN>>>") {
		t.Errorf("Call = %+v (network %v), want the remote's output fenced", res, g.box.runs[0].Network)
	}
}

// TestAChangeSetTooLargeIsDropped: an approved command that changes more
// paths than one change set may is applied in no part.
func TestAChangeSetTooLargeIsDropped(t *testing.T) {
	g := newRig(t)
	g.box.writes = map[string]string{}
	for i := range policy.MaxChangeSetPaths + 1 {
		g.box.writes[fmt.Sprintf("many/f%04d", i)] = "x"
	}
	res := carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "touch many"}))
	if res.Applied == nil || res.Applied.Err == nil || len(res.Applied.Applied) != 0 || !strings.Contains(res.Answer, "none applied") {
		t.Fatalf("Call = %+v, want the changes dropped", res)
	}
	if _, ok := g.file("many"); ok {
		t.Error("part of it was applied")
	}
}

// keptConftest runs an approved command that writes a conftest.py, which
// policy keeps for the owner's own look, and returns the request core
// parks for it.
func keptConftest(t *testing.T, g *rig) approval.Request {
	t.Helper()
	g.box.writes = map[string]string{"conftest.py": "import os\n"}
	call := g.approved("run_shell", map[string]string{"command": "echo > conftest.py"})
	res := carry(g.r, context.Background(), call)
	if res.Kept == nil || res.Applied != nil || !strings.Contains(res.Answer, "NOT applied") {
		t.Fatalf("Call = %+v, want the change set kept for the owner", res)
	}
	if _, ok := g.file("conftest.py"); ok {
		t.Fatal("conftest.py was applied before the owner looked")
	}
	// Parked as the authority parks it: with the digest of the set as
	// kept.
	req := res.KeptRequest(call)
	cs, err := g.r.OpenKept(req.ChangeSet)
	if err == nil {
		req.Digest, err = cs.Digest()
	}
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestAKeptChangeSetIsAppliedAsShown: the owner's yes applies the change
// set they were shown, and it is gone after.
func TestAKeptChangeSetIsAppliedAsShown(t *testing.T) {
	g := newRig(t)
	req := keptConftest(t, g)
	report := applyKept(g.r, context.Background(), req)
	if report.Err != nil || len(report.Applied) != 1 {
		t.Fatalf("ApplyKept = %+v, want conftest.py applied", report)
	}
	if got, _ := g.file("conftest.py"); got != "import os\n" {
		t.Errorf("conftest.py = %q", got)
	}
	if _, err := os.Stat(filepath.Join(g.r.Kept, req.ChangeSet.Dir)); err == nil {
		t.Error("the kept change set is still there")
	}
}

// TestAKeptChangeSetThatChangedIsNotApplied is the attack: the kept
// change set is altered while it waits (another file slipped into its
// layer), or the request names a digest the owner was not shown. Nothing
// of it is applied.
func TestAKeptChangeSetThatChangedIsNotApplied(t *testing.T) {
	t.Run("layer", func(t *testing.T) {
		g := newRig(t)
		req := keptConftest(t, g)
		if err := os.WriteFile(filepath.Join(g.r.Kept, req.ChangeSet.Dir, "sitecustomize.py"), []byte("import evil\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if report := applyKept(g.r, context.Background(), req); report.Err == nil || len(report.Applied) != 0 {
			t.Errorf("ApplyKept = %+v, want nothing applied", report)
		}
		for _, f := range []string{"conftest.py", "sitecustomize.py"} {
			if _, ok := g.file(f); ok {
				t.Errorf("%s was applied", f)
			}
		}
	})
	t.Run("digest", func(t *testing.T) {
		g := newRig(t)
		req := keptConftest(t, g)
		req.Digest = strings.Repeat("0", 64)
		if report := applyKept(g.r, context.Background(), req); report.Err == nil || !strings.Contains(report.Err.Error(), "not what you were shown") {
			t.Errorf("ApplyKept = %+v, want nothing applied", report)
		}
		if _, ok := g.file("conftest.py"); ok {
			t.Error("conftest.py was applied")
		}
	})
}

// TestAKeptChangeSetTurnedDownIsGone, and a name that is not core's is
// refused, so that no request row can make core remove another
// directory.
func TestAKeptChangeSetTurnedDownIsGone(t *testing.T) {
	g := newRig(t)
	req := keptConftest(t, g)
	if err := g.r.DiscardKept(req.ChangeSet); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(g.r.Kept, req.ChangeSet.Dir)); err == nil {
		t.Error("the kept change set is still there")
	}
	if report := applyKept(g.r, context.Background(), req); report.Err == nil {
		t.Errorf("ApplyKept of a discarded set = %+v, want an error", report)
	}
	for _, name := range []string{"", "../state", "a/b", "."} {
		if err := g.r.DiscardKept(&approval.ChangeSetPayload{Dir: name}); err == nil {
			t.Errorf("DiscardKept(%q) = nil, want it refused", name)
		}
	}
}

// TestExistingTestsStayAsTheyWere is the read-only-tests rule around an
// approved change: a write that rewrites an existing test's assertion,
// and a command that does, are put back, with a note to the model and
// the owner; a new test beside them stays.
func TestExistingTestsStayAsTheyWere(t *testing.T) {
	testhost.Tool(t, "python3", "python3")
	const before = "def test_sum():\n    assert 1 + 1 == 2\n"
	const cheat = "def test_sum():\n    assert True\n\ndef test_new():\n    assert 2 == 2\n"
	g := newRig(t)
	if HasTests(g.ws) {
		t.Fatal("HasTests of an empty workspace")
	}
	if err := os.WriteFile(filepath.Join(g.ws, "test_sum.py"), []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if !HasTests(g.ws) {
		t.Fatal("HasTests does not see test_sum.py")
	}
	res := carry(g.r, context.Background(), g.approved("write_file", map[string]string{"path": "test_sum.py", "content": cheat}))
	if !strings.Contains(res.Answer, "put test_sum.py back") || !strings.Contains(res.Answer, "test_sum") {
		t.Errorf("write = %+v, want test_sum.py put back", res)
	}
	if got, _ := g.file("test_sum.py"); got != before {
		t.Errorf("test_sum.py = %q, want it as it was", got)
	}

	g.box.writes = map[string]string{"test_sum.py": cheat}
	res = carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "sed -i s/1/0/ test_sum.py"}))
	if res.Applied == nil || !strings.Contains(res.Applied.Guard, "put test_sum.py back") {
		t.Fatalf("command = %+v, want its report to say test_sum.py was put back", res)
	}
	if got, _ := g.file("test_sum.py"); got != before {
		t.Errorf("test_sum.py = %q, want it as it was", got)
	}
	owner := res.Applied.ForOwner("the changes of run_shell")
	if !strings.Contains(owner.Text, "test_sum.py") {
		t.Errorf("the owner is told %q, want the put-back named", owner.Text)
	}

	// Adding a test is fine.
	g.box.writes = map[string]string{"test_sum.py": before + "\ndef test_more():\n    assert 3 == 3\n"}
	res = carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "echo >> test_sum.py"}))
	if res.Applied == nil || res.Applied.Guard != "" {
		t.Fatalf("command = %+v, want the added test kept", res)
	}
	if got, _ := g.file("test_sum.py"); !strings.Contains(got, "test_more") {
		t.Errorf("test_sum.py = %q, want the new test kept", got)
	}
}

// TestPytestsConfigurationWaitsForTheOwner: a pyproject.toml that
// configures pytest chooses what every test run loads, so it is kept for
// the owner's look; one without a pytest section is applied.
func TestPytestsConfigurationWaitsForTheOwner(t *testing.T) {
	g := newRig(t)
	g.box.writes = map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-p evil\"\n"}
	res := carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "touch pyproject.toml"}))
	if res.Kept == nil || !strings.Contains(strings.Join(res.Kept.Risks, ";"), "pytest's configuration") {
		t.Errorf("Call = %+v, want it kept as pytest's configuration", res)
	}
	g.box.writes = map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n"}
	res = carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "touch pyproject.toml"}))
	if res.Applied == nil || res.Kept != nil {
		t.Errorf("Call = %+v, want it applied", res)
	}
}

// TestALongChangeListIsSummedUp: a command that makes many files is told
// to the model in a few lines, and to the owner with the whole list as a
// file.
func TestALongChangeListIsSummedUp(t *testing.T) {
	g := newRig(t)
	g.box.writes = map[string]string{}
	for i := range 300 {
		g.box.writes[fmt.Sprintf("out/f%03d.txt", i)] = "x"
	}
	res := carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "touch out"}))
	if res.Applied == nil || len(res.Applied.Applied) != 301 {
		t.Fatalf("Call = %+v, want 301 changes applied", res)
	}
	if lines := strings.Count(res.Answer, "\n"); lines > 40 {
		t.Errorf("the model is told %d lines, want a summary", lines)
	}
	if owner := res.Applied.ForOwner("touch"); owner.FileName == "" || !strings.Contains(string(owner.File), "out/f299.txt") {
		t.Errorf("the owner is sent %q with file %q, want the whole list as a file", owner.Text, owner.FileName)
	}
}

// failingFetcher is a server that cannot be reached.
type failingFetcher struct{}

func (failingFetcher) Get(context.Context, string) (fetch.Response, error) {
	return fetch.Response{}, errors.New("connection refused")
}

// TestAFetchThatFailsSaysSo and brings nothing from outside.
func TestAFetchThatFailsSaysSo(t *testing.T) {
	g := newRig(t)
	g.r.Fetch = failingFetcher{}
	res := carry(g.r, context.Background(), g.approved("http_get", map[string]string{"url": "https://example.com/"}))
	if !strings.Contains(res.Answer, "connection refused") || res.Outside != "" {
		t.Errorf("Call = %+v, want the error and no outside mark", res)
	}
}

// TestAnApprovedCommandStartsTheSandboxOnce: a command that leaves the
// workspace's tests alone starts the sandbox once, for itself (the guard
// compares bytes, on the host); one that rewrites a test starts it once
// more, for one reading of the tests before and after together.
func TestAnApprovedCommandStartsTheSandboxOnce(t *testing.T) {
	testhost.Tool(t, "python3", "python3")
	g := newRig(t)
	if err := os.WriteFile(filepath.Join(g.ws, "test_sum.py"), []byte("def test_sum():\n    assert 1 + 1 == 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g.box.writes = map[string]string{"notes.txt": "noted\n"}
	carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "echo noted > notes.txt"}))
	if starts := len(g.box.runs) + g.box.reads; starts != 1 {
		t.Errorf("a command that leaves the tests alone started the sandbox %d times (%d for the guard), want once", starts, g.box.reads)
	}
	g.box.writes = map[string]string{"test_sum.py": "def test_sum():\n    assert True\n"}
	res := carry(g.r, context.Background(), g.approved("run_shell", map[string]string{"command": "sed -i s/1/0/ test_sum.py"}))
	if starts := len(g.box.runs) + g.box.reads; starts != 3 || res.Applied == nil || !strings.Contains(res.Applied.Guard, "put test_sum.py back") {
		t.Errorf("a command that rewrote a test: %d starts in all (%d for the guard), report %+v; want 3 and the test put back", starts, g.box.reads, res.Applied)
	}
}
