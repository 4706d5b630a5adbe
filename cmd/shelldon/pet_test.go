package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/bus"
	"shelldon/config"
	"shelldon/contracts"
	"shelldon/daemon/approval/approved"
	"shelldon/daemon/fetch"
	"shelldon/daemon/launch"
	"shelldon/daemon/mcp/mcptest"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// The test binary doubles as the shelldon binary: tests run it again
// with SHELLDON_TEST_MAIN=1 as `shelldon daemon`, `broker`, `up`…, and core
// starts the real shelldon-worker, built beside it (workerBinary), so
// every turn in these tests runs a real worker in a real child process. With intruderEnv set it
// plays a hostile bus client instead (see intrude), with flooderEnv one
// that floods the bus (see flood), with boardWorkloadEnv the board
// class's calibration workload (see runBoardWorkload).
func TestMain(m *testing.M) {
	if role := os.Getenv(intruderEnv); role != "" {
		os.Exit(intrude(contracts.Role(role)))
	}
	if mode := os.Getenv(flooderEnv); mode != "" {
		os.Exit(flood(mode))
	}
	if os.Getenv(boardWorkloadEnv) != "" {
		os.Exit(runBoardWorkload())
	}
	if os.Getenv("SHELLDON_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Setenv("SHELLDON_TEST_MAIN", "1")
	code := m.Run()
	mcptest.Cleanup() // the MCP servers the tests built
	os.Exit(code)
}

// pet is a whole shelldon for one test: core and broker on a real bus, a
// scripted model behind the real go-openai client, and a transport and a
// panel that record what the owner would see.
type pet struct {
	t      testing.TB
	cfg    config.Config
	model  *demomodel.Server
	cancel context.CancelFunc

	launcher launch.Launcher
	// fetch is core's http_get, nil for the guarded client.
	fetch      approved.Fetcher
	coreCancel context.CancelFunc
	coreDone   chan error
	// stopBroker stops the in-process broker, for a test that runs one
	// of its own; a second call does nothing.
	stopBroker func()

	replies   chan contracts.Outbound
	approvals chan contracts.ApprovalRequest
	closed    chan contracts.ApprovalClosed
	mu        sync.Mutex
	snapshots []contracts.Snapshot
	transport *bus.Client
	// taken are the keys of the replies the transport took.
	taken map[string]bool
	joins chan struct{} // one per join of the transport
	acks  chan contracts.InboundAck
	refs  int // the last ref sayKept gave a message
	// logs is what core and its parts (and, from newPet, its workers)
	// logged, for a test that reads it.
	logs *syncBuffer
}

// petOption adjusts a pet's configuration before it starts.
type petOption func(*config.Config)

func fastTimeouts(w, r, t time.Duration) petOption {
	return func(c *config.Config) {
		c.Timeouts.Worker.Duration, c.Timeouts.Reap.Duration, c.Timeouts.Turn.Duration = w, r, t
	}
}

// testLogger logs into the test's own output, which go test shows only
// for a failing test (or with -v): a flaky failure in CI then carries
// core's account of what happened.
func testLogger(t testing.TB) *slog.Logger {
	if _, bench := t.(*testing.B); bench && !testing.Verbose() {
		// A benchmark's output is always printed; its figures are what
		// matter there.
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// testOutput is where workers' logs go: the terminal with -v, else nowhere.
func testOutput() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

func testConfig(t testing.TB, modelURL string, opts ...petOption) config.Config {
	cfg := config.Default()
	cfg.StateDir = testhost.ShortDir(t)
	cfg.Socket = filepath.Join(cfg.StateDir, "bus.sock")
	cfg.Timeouts.Worker.Duration, cfg.Timeouts.Reap.Duration, cfg.Timeouts.Turn.Duration = 8*time.Second, 9*time.Second, 10*time.Second
	cfg.Worker.CPUSeconds = 10
	// Every command's container has a sandbox user for root, as on a
	// board (the .deb's shelldon-sandbox; nobody is on every Debian).
	cfg.Sandbox.User = "nobody"
	cfg.Turn.ReactionDwell.Duration = time.Minute
	cfg.Turn.WorkerCommand = []string{workerBinary(t)}
	cfg.Providers = []config.Provider{{Name: "scripted", BaseURL: modelURL, Model: demomodel.ModelName}}
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test configuration: %v", err)
	}
	return cfg
}

func newPet(t testing.TB, model *demomodel.Server, opts ...petOption) *pet {
	t.Helper()
	logs := new(syncBuffer)
	return newPetLogging(t, childWorkers(t, logs), logs, model, opts...)
}

// childWorkers starts workers as child processes whose logs go to logs
// too (not for a benchmark, whose turns would pile up there).
func childWorkers(t testing.TB, logs *syncBuffer) launch.Child {
	workers := launch.Child{Output: io.MultiWriter(testOutput(), logs)}
	if _, bench := t.(*testing.B); bench {
		workers.Output = testOutput()
	}
	return workers
}

// newPetLaunchedBy is newPet with core starting workers through launcher.
func newPetLaunchedBy(t testing.TB, launcher launch.Launcher, model *demomodel.Server, opts ...petOption) *pet {
	t.Helper()
	return newPetLogging(t, launcher, new(syncBuffer), model, opts...)
}

// newPetLogging is newPetLaunchedBy keeping what core logs in logs too,
// where the launcher may also put its workers' logs.
func newPetLogging(t testing.TB, launcher launch.Launcher, logs *syncBuffer, model *demomodel.Server, opts ...petOption) *pet {
	t.Helper()
	return newPetOf(t, &pet{launcher: launcher, logs: logs}, model, opts...)
}

// newPetServing is newPet whose approved http_gets are answered by
// pages, as a server would answer them, whatever host the URL names.
func newPetServing(t testing.TB, pages http.Handler, model *demomodel.Server, opts ...petOption) *pet {
	t.Helper()
	logs := new(syncBuffer)
	return newPetOf(t, &pet{launcher: childWorkers(t, logs), logs: logs, fetch: servedPages{pages}}, model, opts...)
}

// servedPages carries out core's approved http_gets with a handler of the
// test's, in place of the guarded client: what a page says is under test
// here, not where it lives (package fetch tests that).
type servedPages struct{ pages http.Handler }

func (s servedPages) Get(_ context.Context, url string) (fetch.Response, error) {
	answer := httptest.NewRecorder()
	s.pages.ServeHTTP(answer, httptest.NewRequest(http.MethodGet, url, nil))
	return fetch.Response{URL: url, Status: answer.Code, ContentType: answer.Header().Get("Content-Type"), Body: answer.Body.Bytes()}, nil
}

// newPetOf starts the pet p, whose launcher and logs are set.
func newPetOf(t testing.TB, p *pet, model *demomodel.Server, opts ...petOption) *pet {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	p.t, p.model, p.replies = t, model, make(chan contracts.Outbound, 256)
	p.cfg = testConfig(t, srv.URL+"/v1", opts...)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.startCore()

	chain, err := newChain(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	brokerCtx, stopBroker := context.WithCancel(ctx)
	brokerDone := make(chan struct{})
	go func() {
		defer close(brokerDone)
		broker.Serve(brokerCtx, p.cfg.Socket, int(p.cfg.Bus.MaxFrame), chain, testLogger(t).With("actor", "broker"))
	}()
	p.stopBroker = func() {
		stopBroker()
		<-brokerDone
	}
	p.joinBus(ctx)
	t.Cleanup(func() {
		cancel()
		p.stopCore()
		p.stopBroker()
	})
	return p
}

// joinBus connects the pet's transport, which collects the replies, and
// its panel, which collects the faces, to core's bus, and waits for the
// transport to join. Both rejoin by themselves after a core restart.
func (p *pet) joinBus(ctx context.Context) {
	p.t.Helper()
	p.transport = &bus.Client{Socket: p.cfg.Socket, Hello: contracts.Hello{Role: contracts.RoleTransport, Name: "test"}}
	p.joins = make(chan struct{}, 16)
	p.transport.OnConnect = func(*bus.Conn) {
		select {
		case p.joins <- struct{}{}:
		default:
		}
	}
	if p.approvals == nil {
		p.approvals = make(chan contracts.ApprovalRequest, 16)
		p.closed = make(chan contracts.ApprovalClosed, 64)
		p.acks = make(chan contracts.InboundAck, 64)
	}
	go p.transport.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
		switch env.Kind {
		case contracts.KindOutbound:
			var out contracts.Outbound
			if env.Decode(&out) == nil && p.takeReply(out.Key) {
				p.replies <- out
			}
		case contracts.KindApprovalRequest:
			var req contracts.ApprovalRequest
			if env.Decode(&req) == nil {
				p.approvals <- req
			}
		case contracts.KindApprovalClosed:
			var c contracts.ApprovalClosed
			if env.Decode(&c) == nil {
				select {
				case p.closed <- c:
				default: // a test that does not read them must not stall the transport
				}
			}
		case contracts.KindInboundAck:
			var a contracts.InboundAck
			if env.Decode(&a) == nil {
				select {
				case p.acks <- a:
				default:
				}
			}
		}
	})
	panel := &bus.Client{Socket: p.cfg.Socket, Hello: contracts.Hello{Role: contracts.RolePanel, Name: "test"}}
	go panel.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
		var s contracts.Snapshot
		if env.Decode(&s) == nil {
			p.mu.Lock()
			p.snapshots = append(p.snapshots, s)
			p.mu.Unlock()
		}
	})
	p.waitJoin(10 * time.Second)
}

// takeReply does what a transport does with a reply core keeps until it
// is held (one with a key): it confirms it, and takes it once. It reports
// whether the reply is new.
func (p *pet) takeReply(key string) bool {
	if key == "" {
		return true
	}
	p.mu.Lock()
	taken := p.taken[key]
	if p.taken == nil {
		p.taken = map[string]bool{}
	}
	p.taken[key] = true
	p.mu.Unlock()
	if env, err := contracts.NewEnvelope(contracts.KindOutboundAck, "", contracts.OutboundAck{Key: key}); err == nil {
		p.transport.Send(env) // not heard: core sends the reply again, taken once
	}
	return !taken
}

// waitJoin waits for the transport's next join of the bus.
func (p *pet) waitJoin(within time.Duration) {
	p.t.Helper()
	select {
	case <-p.joins:
	case <-time.After(within):
		p.t.Fatalf("the test transport did not join the bus within %v", within)
	}
}

func (p *pet) startCore() {
	ctx, cancel := context.WithCancel(context.Background())
	p.coreCancel = cancel
	p.coreDone = make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		p.coreDone <- func() error {
			store, err := openState(p.cfg)
			if err != nil {
				return err
			}
			defer store.Close() // before coreDone: the next core takes the lock at once
			return runCore(ctx, p.cfg, store, p.coreLog(), coreRun{launcher: p.launcher, fetch: p.fetch, ready: func() { close(ready) }})
		}()
	}()
	select {
	case <-ready:
	case err := <-p.coreDone:
		// Nothing is left to stop: a cleanup's stopCore must not wait
		// for the end it just took.
		cancel()
		p.coreCancel = nil
		p.t.Fatalf("core did not start: %v", err)
	}
}

// coreLog is core's logger: the test's output, and p.logs (not for a
// benchmark, whose turns would pile up there).
func (p *pet) coreLog() *slog.Logger {
	if _, bench := p.t.(*testing.B); bench {
		return testLogger(p.t)
	}
	return slog.New(slog.NewTextHandler(io.MultiWriter(p.t.Output(), p.logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// stopCore stops the in-process core; a second call does nothing.
func (p *pet) stopCore() {
	if p.coreCancel == nil {
		return
	}
	p.coreCancel()
	p.coreCancel = nil
	if err := <-p.coreDone; err != nil {
		p.t.Errorf("core stopped with %v", err)
	}
}

// say sends the owner's message, waiting for the transport to be joined.
func (p *pet) say(text string) {
	p.t.Helper()
	p.send(contracts.Inbound{Chat: "owner", Text: text})
}

// sayKept sends the owner's message as a transport that keeps it until
// core confirms it durable (Telegram), and waits for that confirmation.
func (p *pet) sayKept(text string) {
	p.t.Helper()
	p.refs++
	ref := strconv.Itoa(p.refs)
	p.send(contracts.Inbound{Chat: "owner", Text: text, Ref: ref})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case a := <-p.acks:
			if a.Ref == ref {
				return
			}
		case <-deadline:
			p.t.Fatalf("core did not confirm message %s (%q) kept", ref, text)
		}
	}
}

func (p *pet) send(in contracts.Inbound) {
	p.t.Helper()
	text := in.Text
	env, err := contracts.NewEnvelope(contracts.KindInbound, "", in)
	if err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.transport.Send(env)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("say %q: %v", text, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// decide sends the owner's tap on a parked call.
func (p *pet) decide(turn string, approve bool) {
	p.t.Helper()
	p.answer(contracts.Decision{Turn: turn, Approve: approve})
}

// grant approves the parked call of turn and grants the rule it offers
// ("Always for …").
func (p *pet) grant(turn string) {
	p.t.Helper()
	p.answer(contracts.Decision{Turn: turn, Approve: true, Always: true})
}

// answer sends the owner's decision d, from the owner's chat.
func (p *pet) answer(d contracts.Decision) {
	p.t.Helper()
	d.Chat = "owner"
	env, err := contracts.NewEnvelope(contracts.KindDecision, "", d)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := p.transport.Send(env); err != nil {
		p.t.Fatalf("decide: %v", err)
	}
}

// approval waits for the next approval request to the owner.
func (p *pet) approval(within time.Duration) contracts.ApprovalRequest {
	p.t.Helper()
	select {
	case r := <-p.approvals:
		return r
	case <-time.After(within):
		p.t.Fatalf("no approval request within %v", within)
		return contracts.ApprovalRequest{}
	}
}

// settled waits for core's word that a request is settled, and checks
// the outcome.
func (p *pet) settled(turn, outcome string) {
	p.t.Helper()
	select {
	case c := <-p.closed:
		if c.Turn != turn || c.Outcome != outcome {
			p.t.Fatalf("core settled %+v, want %s %s", c, turn, outcome)
		}
	case <-time.After(10 * time.Second):
		p.t.Fatalf("core did not say that %s was settled (%s)", turn, outcome)
	}
}

// reply waits for the next reply to the owner.
func (p *pet) reply(within time.Duration) contracts.Outbound {
	p.t.Helper()
	select {
	case r := <-p.replies:
		return r
	case <-time.After(within):
		p.t.Fatalf("no reply within %v", within)
		return contracts.Outbound{}
	}
}

// noReply asserts that no further reply arrives within settle.
func (p *pet) noReply(settle time.Duration) {
	p.t.Helper()
	select {
	case r := <-p.replies:
		p.t.Fatalf("unexpected extra reply %+v", r)
	case <-time.After(settle):
	}
}

func (p *pet) turns() []state.TurnRecord {
	p.t.Helper()
	return readState(p, func(ctx context.Context, s *state.Store) ([]state.TurnRecord, error) {
		return s.Turns().Recent(ctx, 1000)
	})
}

// waitTurns waits until n turns have finished.
func (p *pet) waitTurns(n int) []state.TurnRecord {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		turns := p.turns()
		done := 0
		for _, t := range turns {
			if !t.Ended.IsZero() {
				done++
			}
		}
		if done >= n {
			return turns
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%d of %d turns finished: %+v", done, n, turns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRequests waits until the model has been asked n times.
func (p *pet) waitRequests(n int) []demomodel.Request {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if reqs := p.model.Requests(); len(reqs) >= n {
			return reqs
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the model was asked %d times, want %d", len(p.model.Requests()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *pet) faces() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range p.snapshots {
		out = append(out, s.Face)
	}
	return out
}

// waitFace waits until the last face the panel got is face, and returns
// every face it got.
func (p *pet) waitFace(face string, within time.Duration) []string {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for {
		faces := p.faces()
		if len(faces) > 0 && faces[len(faces)-1] == face {
			return faces
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the panel's faces are %v after %v, want the last to be %s", faces, within, face)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lastUser(req demomodel.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == contracts.ChatUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func TestPlainTurn(t *testing.T) {
	model := demomodel.New(demomodel.Step{Text: "Hello, owner!\nTHOUGHT: a new friend\nFACE: excited"})
	p := newPet(t, model)
	p.say("hi there")
	r := p.reply(15 * time.Second)
	if r.Text != "Hello, owner!" || r.Degraded {
		t.Fatalf("reply = %+v, want the model's payload without control lines", r)
	}
	turns := p.waitTurns(1)
	if got := turns[0]; got.Outcome != "ok" || got.Kind != "chat" || got.WorkerPID == 0 ||
		got.WorkerExit != "success" || got.WorkerCPU <= 0 || got.WorkerPeak <= 0 || got.WorkerJoin <= 0 {
		t.Errorf("turn record = %+v, want an ok chat turn with a worker pid and the launcher's figures", got)
	}
	req := p.waitRequests(1)[0]
	if req.Messages[0].Role != contracts.ChatSystem || !strings.Contains(req.Messages[0].Content, "shelldon") {
		t.Errorf("first prompt message = %+v, want the directive as the system message", req.Messages[0])
	}
	if got := lastUser(req); got != "hi there" {
		t.Errorf("prompt's user message = %q, want %q", got, "hi there")
	}
	// The panel's connection is not the transport's: the reaction may
	// reach it a moment after the reply.
	if faces := p.waitFace("excited", 5*time.Second); !slices.Contains(faces, "thinking") {
		t.Errorf("faces shown = %v, want thinking then excited", faces)
	}

	// The next turn carries the first exchange as history.
	model.Enqueue(demomodel.Step{Text: "still here"})
	p.say("again")
	if r := p.reply(15 * time.Second); r.Text != "still here" {
		t.Fatalf("second reply = %q", r.Text)
	}
	req = p.waitRequests(2)[1]
	var history []string
	for _, m := range req.Messages[1:] {
		history = append(history, m.Role+":"+m.Content)
	}
	want := []string{"user:hi there", "assistant:Hello, owner!", "user:again"}
	if strings.Join(history, "|") != strings.Join(want, "|") {
		t.Errorf("second prompt = %q, want %q", history, want)
	}
}

func TestBurstDuringSlowTurnCoalesces(t *testing.T) {
	model := demomodel.New(
		demomodel.Step{Text: "slow answer", Delay: 1500 * time.Millisecond},
		demomodel.Step{Text: "caught up"},
	)
	p := newPet(t, model)
	p.say("first")
	p.waitRequests(1)
	var burst []string
	for i := range 50 {
		burst = append(burst, fmt.Sprintf("message %02d", i))
		p.say(burst[i])
	}
	if r := p.reply(15 * time.Second); r.Text != "slow answer" {
		t.Fatalf("first reply = %q", r.Text)
	}
	if r := p.reply(15 * time.Second); r.Text != "caught up" {
		t.Fatalf("second reply = %q", r.Text)
	}
	turns := p.waitTurns(2)
	if len(turns) != 2 || turns[0].Kind != "catch-up" {
		t.Fatalf("turns = %+v, want the first turn and exactly one catch-up turn", turns)
	}
	reqs := p.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was asked %d times, want 2", len(reqs))
	}
	if got, want := lastUser(reqs[1]), strings.Join(burst, "\n"); got != want {
		t.Errorf("catch-up text = %q, want all 50 messages in order, joined by newlines", got)
	}
	p.noReply(300 * time.Millisecond)
}

func TestSilentBrokerDegradesAndRecovers(t *testing.T) {
	model := demomodel.New(demomodel.Step{Hang: true}, demomodel.Step{Text: "back again"})
	const turnTimeout = 12 * time.Second
	// Generous R and T: a race-built worker can take seconds to start while
	// other packages' tests build images, and one killed at R before it
	// joins would end "crashed" rather than giving up at W. The test still
	// takes about W, because the worker's failure degrades the turn at once.
	p := newPet(t, model, fastTimeouts(2*time.Second, 10*time.Second, turnTimeout))
	started := time.Now()
	p.say("are you there?")
	r := p.reply(turnTimeout + 5*time.Second)
	if !r.Degraded || r.Text != "…can't think right now…" {
		t.Fatalf("reply = %+v, want the degrade answer", r)
	}
	if took := time.Since(started); took > turnTimeout+2*time.Second {
		t.Errorf("degraded after %v, want within T (%v)", took, turnTimeout)
	}
	p.waitTurns(1)
	p.say("hello?")
	if r := p.reply(10 * time.Second); r.Text != "back again" {
		t.Fatalf("reply after a silent broker = %+v", r)
	}
	faces := p.faces()
	if !slices.Contains(faces, "cant-think") {
		t.Errorf("faces = %v, want cant-think among them", faces)
	}
	if turns := p.waitTurns(2); turns[1].Outcome != "failed" {
		t.Errorf("silent turn outcome = %q, want failed (the worker gave up at W)", turns[1].Outcome)
	}
}

// TestToolCallsThroughTheWholePet: the model's tool calls travel through
// the real broker and go-openai client, run in the worker (python_eval in
// its own `shelldon-worker eval`, killed at its 2 s), and their results reach
// the model's next request, each answering its call.
func TestToolCallsThroughTheWholePet(t *testing.T) {
	// A dict key is hashed in one step: 10^12 items, until the kill.
	const forever = `(lambda t: {t: 1})((lambda a: tuple([a] * 1000))((lambda b: tuple([b] * 1000))((lambda c: tuple([c] * 1000))(tuple([0] * 1000)))))`
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{
			{ID: "c1", Name: "python_eval", Args: `{"expression": "6 * 7"}`},
			{ID: "c2", Name: "read_file", Args: `{"path": "../state.db"}`},
			{ID: "c3", Name: "python_eval", Args: `{"expression": "` + strings.ReplaceAll(forever, `"`, `\"`) + `"}`},
		}},
		demomodel.Step{Text: "It is 42."},
	)
	p := newPet(t, model)
	p.say("what is six times seven?")
	if r := p.reply(15 * time.Second); r.Text != "It is 42." {
		t.Fatalf("reply = %+v", r)
	}
	reqs := p.waitRequests(2)
	if got := strings.Join(reqs[0].Tools, " "); got != "get_time read_file list_dir python_eval run_shell write_file edit_file http_get git" {
		t.Errorf("tools offered = %q", got)
	}
	answers := map[string]string{}
	for _, m := range reqs[1].Messages {
		if m.Role == contracts.ChatTool {
			answers[m.ToolCallID] = m.Content
		}
	}
	if answers["c1"] != "42" {
		t.Errorf("python_eval answered %q, want 42", answers["c1"])
	}
	if !strings.HasPrefix(answers["c2"], "error: ") {
		t.Errorf("reading outside the workspace answered %q, want a refusal", answers["c2"])
	}
	if want := "error: python_eval: stopped after 2 s"; !strings.HasPrefix(answers["c3"], want) {
		t.Errorf("python_eval of a hash that never ends answered %q, want %q...", answers["c3"], want)
	}
}

// TestShellCommandsThroughTheWholePet: a read-only command the model asks
// for runs at once in the real sandbox over the workspace, through core,
// and cannot change it.
func TestShellCommandsThroughTheWholePet(t *testing.T) {
	imagetest.Image(t)
	model := demomodel.New(
		demomodel.Step{ToolCalls: []contracts.ToolCall{
			{ID: "c1", Name: "run_shell", Args: `{"command": "ls && cat hello.txt"}`},
		}},
		demomodel.Step{Text: "Looked."},
	)
	p := newPet(t, model)
	ws := statedir.Layout{Root: p.cfg.StateDir}.Workspace()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.say("what is in your workspace?")
	if r := p.reply(30 * time.Second); r.Text != "Looked." {
		t.Fatalf("reply = %+v", r)
	}
	answers := map[string]string{}
	for _, m := range p.waitRequests(2)[1].Messages {
		if m.Role == contracts.ChatTool {
			answers[m.ToolCallID] = m.Content
		}
	}
	if a := answers["c1"]; !strings.HasPrefix(a, "exit 0") || !strings.Contains(a, "hello from the workspace") {
		t.Errorf("ls && cat answered %q, want its output from the sandbox", a)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.txt")); err != nil {
		t.Errorf("hello.txt after the turn: %v", err)
	}
}
