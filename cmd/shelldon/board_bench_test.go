package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/statedir"
	"shelldon/daemon/toolstore"
	"shelldon/demomodel"
	"shelldon/sandbox/cgroup"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
	"shelldon/transports/telegram/telegramtest"
)

// The scripted model's pace for the owner's chat: a hosted model's first
// token after half a second, then 40 tokens a second, for an answer of
// boardAnswerTokens tokens (typical of hosted chat models; not measured
// here). Every other step answers at once, so that what is timed there
// is the pet's own work.
const (
	boardFirstToken   = 500 * time.Millisecond
	boardTokenRate    = 40 // tokens a second
	boardAnswerTokens = 60
)

// boardPause is the pause after each exchange, as between an owner's
// messages: what a turn does once it has replied (its record, the
// panel's redraw) is over before the next begins.
const boardPause = 700 * time.Millisecond

// BenchmarkBoardClass runs the installed pet — `shelldon daemon`,
// `shelldon broker` and `shelldon panel`, each a process, the workers and
// sandboxes they start — in one control group holding it to a Raspberry
// Pi Zero 2 W: the CPU throughput of one Cortex-A53 core at 1 GHz
// (calibrateBoardQuota says how that is found) and 416 MB of memory for
// everything. The owner talks to it over Telegram, through a local Bot
// API server, and the model is scripted. Each round (b.N of them, after
// one that warms the pet) times, in turn, and the benchmark reports their
// medians:
//
//   - chat: the owner's message to the first visible word of the answer
//     and to the whole answer, the model streaming it as boardFirstToken
//     and boardTokenRate say. The first word is the first call of the
//     bot's that shows the owner text holding the answer's first word (a
//     draft, a message or an edit), as the Bot API server received it.
//   - an instant turn: a message to its answer, the model answering at
//     once: the pet's own overhead.
//   - /status: the command to its answer.
//   - an approved command (a run_shell that writes a file), from the
//     owner's tap on Approve to the model's answer after it, in a
//     workspace with no tests and in one with a passing test.
//   - a self-coded tool's call: a turn calling the kept greet tool, less
//     an instant turn (the extra model request is instant).
//   - the pytest gate: from the reply proposing a tool to the card asking
//     to keep it, which the gate's run comes between.
//   - direct runs, in the same group and the same container: `shelldon
//     sandbox run` of `true` (one sandbox start), of the approved
//     command, of the tool's Python, and of pytest over the tool and its
//     test, each as the process's wall time and as its container's own;
//     the goals are measured against them.
//
// It needs root, cgroups with the cpu and memory controllers, the
// sandbox image, and bin/ from `make build`; `make bench-board` runs it.
func BenchmarkBoardClass(b *testing.B) {
	imagetest.Image(b)
	quota := boardQuotaOnce(b)
	pet := startBoardPet(b, quota.CPUs)
	for _, step := range pet.rounds() {
		step.run(pet, 0) // the first of each warms what it loads once
	}
	figures := map[string][]time.Duration{}
	b.ResetTimer()
	for round := range b.N {
		steps := pet.rounds()
		// Interleaved, and rotated each round, so that no figure always
		// follows the same one.
		for i := range steps {
			step := steps[(i+round)%len(steps)]
			for name, d := range step.run(pet, round+1) {
				figures[name] = append(figures[name], d)
			}
		}
	}
	b.StopTimer()
	stats, err := pet.group.Stats()
	if err != nil {
		b.Fatal(err)
	}
	report := boardReport{quota: quota, rounds: b.N, medians: map[string]time.Duration{}, stats: stats}
	for name, ds := range figures {
		report.medians[name] = median(ds)
		b.ReportMetric(ms(report.medians[name]), name+"-ms")
	}
	b.ReportMetric(quota.CPUs, "quota-cpus")
	b.ReportMetric(float64(stats.MemoryPeak)/(1<<20), "memory-peak-MB")
	b.ReportMetric(float64(stats.OOMKills), "oom-kills")
	b.ReportMetric(0, "ns/op")
	report.print(os.Stdout)
}

// boardQuotaOnce calibrates the quota once per test binary: the
// benchmark runs once with b.N = 1 before its real run.
var boardQuotaOnce = func() func(b *testing.B) boardQuota {
	var once sync.Once
	var q boardQuota
	return func(b *testing.B) boardQuota {
		once.Do(func() { q = calibrateBoardQuota(b) })
		if q.CPUs == 0 {
			b.Fatal("the board's quota was not calibrated")
		}
		return q
	}
}()

// boardPet is the installed pet under the board's limits, and what the
// benchmark drives it with.
type boardPet struct {
	b     *testing.B
	api   *telegramtest.Server
	group *cgroup.Group
	bin   string
	// workspace is the pet's; direct is the configuration of the direct
	// runs, whose state directory holds the tool and its test in
	// board-direct/, out of the pet's workspace (where they would be
	// tests in it).
	workspace, direct string
}

// greetManifest is the kept tool the turns call.
var greetManifest = toolstore.Manifest{Name: "greet", Description: "Greets someone by name.",
	Schema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}}

// boardCommand is the approved command: it changes the workspace, so it
// asks, and runs over a captured view.
const boardCommand = "date +%s%N > greeting.txt && echo done"

// startBoardPet starts the installed pet's three processes in one group
// limited to cpus and boardMemory, with the greet tool kept, and waits
// for its transport to poll.
func startBoardPet(b *testing.B, cpus float64) *boardPet {
	bin := builtBinary(b)
	api := telegramtest.New(b, peerBotToken)
	api.SetWaitLimit(time.Minute)
	cfg := config.Default()
	cfg.StateDir = testhost.ShortDir(b)
	cfg.Socket = filepath.Join(cfg.StateDir, "bus.sock")
	cfg.Providers = []config.Provider{{Name: "scripted", BaseURL: serve(b, boardModel(b)), Model: demomodel.ModelName}}
	cfg.Telegram.Token, cfg.Telegram.APIURL, cfg.Telegram.AllowedUsers = peerBotToken, api.URL(), []int64{ownerID}
	cfg.Panel.Display, cfg.Panel.PNGPath = "png", filepath.Join(memoryDir(b), "panel.png")
	cfg.Sandbox.User = "nobody" // as the tests' pets: the .deb's shelldon-sandbox is not here
	layout := statedir.Layout{Root: cfg.StateDir}
	if err := os.MkdirAll(layout.Workspace(), 0o755); err != nil {
		b.Fatal(err)
	}
	keepTool(b, layout, greetManifest, greetModule, greetTest)

	direct := cfg
	direct.StateDir = testhost.ShortDir(b)
	direct.Socket = filepath.Join(direct.StateDir, "bus.sock")
	tool := filepath.Join(statedir.Layout{Root: direct.StateDir}.Workspace(), "board-direct")
	if err := os.MkdirAll(tool, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, content := range map[string]string{"greet.py": greetModule, "test_greet.py": greetTest} {
		if err := os.WriteFile(filepath.Join(tool, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}

	group := newBoardGroup(b, fmt.Sprintf("board-%d", os.Getpid()), cgroup.Limits{CPUQuota: cpus, MemoryMax: boardMemory})
	path := writeTestConfig(b, cfg)
	for _, service := range []string{"daemon", "broker", "panel"} {
		cmd := exec.Command(bin, service, "--config", path)
		if testing.Verbose() {
			cmd.Stderr = os.Stderr
		}
		if err := group.Start(cmd); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	p := &boardPet{b: b, api: api, group: group, bin: bin, workspace: layout.Workspace(), direct: writeTestConfig(b, direct)}
	(&chatPeer{name: "board", api: api}).waitPolling(b)
	return p
}

// boardModel answers by the owner's message, "<what> <round>": the
// chat's weather question at the board's pace, and at once the rest.
func boardModel(b *testing.B) *demomodel.Server {
	model := demomodel.New()
	model.Fallback = func(r demomodel.Request) demomodel.Step {
		what, round, _ := strings.Cut(lastUser(r), " ")
		if last := r.Messages[len(r.Messages)-1]; last.Role == contracts.ChatTool {
			return demomodel.Step{Text: what + " done " + round}
		}
		switch what {
		case "weather":
			return pacedAnswer(boardAnswer(round))
		case "greet":
			return demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "g" + round, Name: "greet", Args: `{"name": "owner"}`}}}
		case "write", "write-tested":
			return shellStep("s"+round, boardCommand)
		case "propose":
			return proposal(b, "I wrote shout "+round+".", "shout",
				strings.ReplaceAll(greetModule, "hello", "HELLO"),
				strings.ReplaceAll(strings.ReplaceAll(greetTest, "greet", "shout"), "hello", "HELLO"))
		}
		return demomodel.Step{Text: "pong " + round}
	}
	return model
}

// boardAnswer is the chat's answer of boardAnswerTokens words, its first
// word telling the round.
func boardAnswer(round string) string {
	words := []string{"Sunny" + round}
	for len(words) < boardAnswerTokens {
		words = append(words, strings.Fields("and mild this morning, with a light wind from the west; rain is likely after four, so take a coat")...)
	}
	return strings.Join(words[:boardAnswerTokens], " ")
}

// pacedAnswer is the model's answer of text, a word a token, streamed at
// the board's pace: its first piece after boardFirstToken, the last
// boardModelWriting after it, the pieces evenly between.
func pacedAnswer(text string) demomodel.Step {
	pieces := len(demomodel.Chunks(text))
	return demomodel.Step{Text: text, Delay: boardFirstToken, ChunkDelay: boardModelWriting / time.Duration(max(pieces-1, 1))}
}

// boardModelWriting is the scripted model's time from the chat answer's
// first token to its last.
const boardModelWriting = time.Duration(boardAnswerTokens-1) * time.Second / boardTokenRate

// shown are the Bot API methods by which the bot shows the owner text.
var shown = []string{"sendMessageDraft", "sendMessage", "editMessageText"}

// firstShowing returns when the Bot API server received the first call
// after call seq that showed the owner text holding word.
func (p *boardPet) firstShowing(seq int, word string) (time.Time, bool) {
	for _, c := range p.api.Calls("") {
		if c.Seq > seq && c.Status == http.StatusOK && slices.Contains(shown, c.Method) && strings.Contains(c.Params["text"], word) {
			return c.At, true
		}
	}
	return time.Time{}, false
}

// lastSeq is the sequence number of the server's latest call.
func (p *boardPet) lastSeq() int {
	calls := p.api.Calls("")
	if len(calls) == 0 {
		return 0
	}
	return calls[len(calls)-1].Seq
}

// boardStep is one exchange of a round, returning its figures by name.
type boardStep struct {
	name string
	run  func(p *boardPet, round int) map[string]time.Duration
}

// rounds are the exchanges of one round.
func (p *boardPet) rounds() []boardStep {
	return []boardStep{
		{"chat", (*boardPet).chat},
		{"instant", func(p *boardPet, round int) map[string]time.Duration {
			return map[string]time.Duration{"instant-turn": p.exchange(fmt.Sprintf("ping %d", round), fmt.Sprintf("pong %d", round))}
		}},
		{"status", func(p *boardPet, round int) map[string]time.Duration {
			return map[string]time.Duration{"status": p.exchange("/status", "Up ")}
		}},
		{"tool", func(p *boardPet, round int) map[string]time.Duration {
			return map[string]time.Duration{"tool-turn": p.exchange(fmt.Sprintf("greet %d", round), fmt.Sprintf("greet done %d", round))}
		}},
		{"command", func(p *boardPet, round int) map[string]time.Duration {
			return map[string]time.Duration{"approved-command": p.approved("write", round)}
		}},
		{"command-with-tests", (*boardPet).approvedWithTests},
		{"gate", (*boardPet).gate},
		{"direct", (*boardPet).directRuns},
	}
}

// lastID is the newest of the bot's messages to the owner, 0 for none.
func (p *boardPet) lastID() int64 {
	var id int64
	for _, m := range p.api.Messages(ownerID) {
		id = max(id, m.ID)
	}
	return id
}

// waitNew waits for a message of the bot's after message after whose
// text holds want, and returns it.
func (p *boardPet) waitNew(after int64, want string) telegramtest.Message {
	p.b.Helper()
	return p.api.WaitMessage(p.b, ownerID, func(m telegramtest.Message) bool { return m.ID > after && strings.Contains(m.Text, want) })
}

// exchange sends text and returns the time to the bot's message holding
// want.
func (p *boardPet) exchange(text, want string) time.Duration {
	p.b.Helper()
	after := p.lastID()
	start := time.Now()
	p.api.SendText(ownerID, text)
	p.waitNew(after, want)
	took := time.Since(start)
	time.Sleep(boardPause)
	return took
}

// chat times the weather question to the answer's first word and to
// the whole of it.
func (p *boardPet) chat(round int) map[string]time.Duration {
	p.b.Helper()
	answer := boardAnswer(fmt.Sprint(round))
	after, seq := p.lastID(), p.lastSeq()
	start := time.Now()
	p.api.SendText(ownerID, fmt.Sprintf("weather %d", round))
	p.waitNew(after, answer)
	whole := time.Since(start)
	firstWord := strings.Fields(answer)[0]
	at, ok := p.firstShowing(seq, firstWord)
	if !ok {
		p.b.Fatalf("no call of the bot's showed %q, yet the answer came", firstWord)
	}
	time.Sleep(boardPause)
	return map[string]time.Duration{"first-word": at.Sub(start), "whole-answer": whole}
}

// approved asks for the command by the message "<what> <round>", waits
// for the card, taps Approve and returns the time from the tap to the
// model's answer after the command.
func (p *boardPet) approved(what string, round int) time.Duration {
	p.b.Helper()
	after := p.lastID()
	p.api.SendText(ownerID, fmt.Sprintf("%s %d", what, round))
	card := p.api.WaitMessage(p.b, ownerID, func(m telegramtest.Message) bool { return m.ID > after && len(m.Keyboard) > 0 })
	time.Sleep(boardPause) // the owner reads the card; the asking turn ends
	after = p.lastID()
	start := time.Now()
	if tap(p.api, card, "Approve") == "" {
		p.b.Fatalf("the card %q has no Approve button", card.Text)
	}
	p.waitNew(after, fmt.Sprintf("%s done %d", what, round))
	took := time.Since(start)
	time.Sleep(boardPause)
	return took
}

// approvedWithTests is approved in a workspace holding a passing test,
// which the guard reads before the command and checks after it.
func (p *boardPet) approvedWithTests(round int) map[string]time.Duration {
	p.b.Helper()
	test := filepath.Join(p.workspace, "test_board.py")
	if err := os.WriteFile(test, []byte("def test_board():\n    assert 1 + 1 == 2\n"), 0o644); err != nil {
		p.b.Fatal(err)
	}
	defer os.Remove(test)
	return map[string]time.Duration{"approved-command-with-tests": p.approved("write-tested", round)}
}

// gate proposes a tool and times from the reply proposing it to the card
// asking to keep it, then throws it away.
func (p *boardPet) gate(round int) map[string]time.Duration {
	p.b.Helper()
	after := p.lastID()
	p.api.SendText(ownerID, fmt.Sprintf("propose %d", round))
	p.waitNew(after, fmt.Sprintf("I wrote shout %d.", round))
	start := time.Now()
	card := p.api.WaitMessage(p.b, ownerID, func(m telegramtest.Message) bool { return m.ID > after && len(m.Keyboard) > 0 })
	took := time.Since(start)
	time.Sleep(boardPause)
	after = p.lastID()
	if tap(p.api, card, "Deny") == "" {
		p.b.Fatalf("the card %q has no Deny button", card.Text)
	}
	p.waitNew(after, "threw shout away")
	time.Sleep(boardPause)
	return map[string]time.Duration{"gate": took}
}

// directRuns times `shelldon sandbox run` in the pet's group: one
// sandbox start, the approved command, the tool's Python and pytest over
// the tool and its test; each as the process's wall time (the binary's
// start, the sandbox's setup, the container, the captured changes) and
// as the container's own (systemd-nspawn's start to its exit, as
// `sandbox run` reports it).
func (p *boardPet) directRuns(int) map[string]time.Duration {
	p.b.Helper()
	figures := map[string]time.Duration{}
	for name, args := range map[string][]string{
		"sandbox-start": {"--", "true"},
		"command":       {"--view", "captured", "--", "sh", "-c", boardCommand},
		"python":        {"--dir", "board-direct", "--", "python3", "-c", `from greet import run; print(run(name="owner"))`},
		"pytest":        {"--dir", "board-direct", "--", "python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"},
	} {
		figures["direct-"+name], figures["container-"+name] = p.sandboxRun(args...)
	}
	return figures
}

// sandboxReport is the line `shelldon sandbox run` ends a run with, which
// gives the container's own time.
var sandboxReport = regexp.MustCompile(`── .* in (\S+); limits held`)

// sandboxRun runs `shelldon sandbox run` with args over the direct
// runs' state, in the pet's group, and returns its wall time and the
// container's.
func (p *boardPet) sandboxRun(args ...string) (wall, container time.Duration) {
	p.b.Helper()
	cmd := exec.Command(p.bin, append([]string{"sandbox", "run", "--config", p.direct}, args...)...)
	out := new(strings.Builder)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := p.group.Start(cmd); err != nil {
		p.b.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		p.b.Fatalf("shelldon sandbox run %q: %v\n%s", args, err, out)
	}
	wall = time.Since(start)
	found := sandboxReport.FindStringSubmatch(out.String())
	if found == nil {
		p.b.Fatalf("shelldon sandbox run %q did not say how long its container took:\n%s", args, out)
	}
	container, err := time.ParseDuration(found[1])
	if err != nil {
		p.b.Fatalf("shelldon sandbox run %q: %v", args, err)
	}
	return wall, container
}

// boardReport is what BenchmarkBoardClass prints: its medians as a
// table, and the goals measured against them.
type boardReport struct {
	quota   boardQuota
	rounds  int
	medians map[string]time.Duration
	stats   cgroup.Stats
}

func (r boardReport) print(w io.Writer) {
	m := r.medians
	toolCall := m["tool-turn"] - m["instant-turn"]
	model := boardFirstToken + boardModelWriting // the paced answer's own time, to its last word
	fmt.Fprintf(w, "board class: %.3f CPUs (this machine %.0f ops/CPU-s; the board %.1f ops/s, under the quota %.1f), memory %d MB; medians of %d rounds\n",
		r.quota.CPUs, r.quota.HereOps, boardOpsPerSecond, r.quota.UnderQuotaOps, boardMemory>>20, r.rounds)
	for _, row := range []struct {
		name string
		d    time.Duration
	}{
		{"message to first visible word (first token " + boardFirstToken.String() + ")", m["first-word"]},
		{"message to whole answer", m["whole-answer"]},
		{"  the model's own time for it", model},
		{"instant turn (model answers at once)", m["instant-turn"]},
		{"/status", m["status"]},
		{"approved command, tap to reply, no tests", m["approved-command"]},
		{"approved command, tap to reply, with tests", m["approved-command-with-tests"]},
		{"self-coded tool call (tool turn less instant turn)", toolCall},
		{"pytest gate (proposal to card)", m["gate"]},
		{"direct: sandbox run true (process / container)", m["direct-sandbox-start"]},
		{"  container", m["container-sandbox-start"]},
		{"direct: the command", m["direct-command"]},
		{"  container", m["container-command"]},
		{"direct: the tool's Python", m["direct-python"]},
		{"  container", m["container-python"]},
		{"direct: pytest over the tool", m["direct-pytest"]},
		{"  container", m["container-pytest"]},
	} {
		fmt.Fprintf(w, "  %-54s %7.0f ms\n", row.name, ms(row.d))
	}
	fmt.Fprintf(w, "  %-54s %7.1f MB, %d OOM kills\n", "memory peak of the group (page cache included)", float64(r.stats.MemoryPeak)/(1<<20), r.stats.OOMKills)
	fmt.Fprintf(w, "goal: first word within first token + 300 ms: %.0f ms after the first token; the whole answer %.0f ms after the model's last word (%.0f ms)\n",
		ms(m["first-word"]-boardFirstToken), ms(m["whole-answer"]-model), ms(model))
	over := m["approved-command-with-tests"] - m["direct-command"]
	fmt.Fprintf(w, "goal: approved command with tests within one sandbox start of a direct run: %.0f ms over the direct run, %.1f container starts of %.0f ms\n",
		ms(over), float64(over)/float64(max(m["container-sandbox-start"], 1)), ms(m["container-sandbox-start"]))
	fmt.Fprintf(w, "goal: tool call within 1.5x its Python run directly: %.2fx the process, %.2fx the container\n",
		float64(toolCall)/float64(max(m["direct-python"], 1)), float64(toolCall)/float64(max(m["container-python"], 1)))
}
