package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"shelldon/clock"
	"shelldon/config"
	"shelldon/sandbox"
)

// Bounds of what a server may make core hold.
const (
	// MaxFrame is the longest JSON-RPC message read from a server: past
	// it the connection is dropped and the server stopped (the SDK's
	// default is 16 MiB, a sixth of a board's memory).
	MaxFrame = 1 << 20
	// MaxResult is the most text of one call's result kept for the
	// model; the rest is cut, and the cut said.
	MaxResult = 16 << 10
	// MaxDescription and MaxSchema bound what one tool's listing takes
	// of every turn's prompt.
	MaxDescription = 1 << 10
	MaxSchema      = 4 << 10
	// stderrTail is how much of a server's stderr is kept for the log
	// and the owner's note when it dies.
	stderrTail = 4 << 10
	// DefaultRecycle is the longest a server's container lives: a busy
	// server is recycled then, as a quiet one is sooner.
	DefaultRecycle = time.Hour
	// teardown is how long a call that lost its connection waits to
	// learn how its server ended.
	teardown = 5 * time.Second
	// minBackoff and maxBackoff bound the wait before a server that died
	// is started again: doubled with each death in a row.
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
)

// Starter starts a process in a sandbox container, or has one
// exchange with a command in a container of its own: [sandbox.Sandbox].
type Starter interface {
	Start(ctx context.Context, spec sandbox.Spec) (*sandbox.Process, error)
	Talk(ctx context.Context, spec sandbox.Spec, talk func(stdin io.WriteCloser, stdout io.ReadCloser) error) (sandbox.Result, error)
}

// Options is what a [Server] needs besides its configuration.
type Options struct {
	// Workspace is the pet's workspace, shown read-only to a server the
	// owner granted it.
	Workspace string
	// Empty is an empty directory shown as the workspace to a server
	// that has none.
	Empty string
	Clock clock.Clock
	Log   *slog.Logger
	// Tell tells the owner something, once per event: a server that died.
	Tell func(text string)
	// Recycle is the longest a server's container lives (its wall
	// time); DefaultRecycle when zero. Its end then is no death: the
	// next call starts it again at once.
	Recycle time.Duration
}

// Tool is one of a server's tools the owner lets the model use.
type Tool struct {
	// Name is the tool's name on the server; Offered, as the model sees
	// it (mcp_<server>_<tool>).
	Name, Offered string
	// Description and Schema (its input's JSON Schema) are the server's,
	// bounded.
	Description string
	Schema      json.RawMessage
	// ReadOnly is the owner's word: the call runs without asking.
	ReadOnly bool
	// Claims are the server's own annotations, worded for the owner's
	// card: shown, never deciding.
	Claims string
}

// Result is what one call returned, as text for the model: untrusted.
type Result struct {
	Text string
	// IsError is the server's saying that the tool failed.
	IsError bool
	// Changes are what a server with workspace = "read-write" wrote to
	// the workspace in the call, not applied: the caller's to apply,
	// keep for the owner or discard. Nil for every other server.
	Changes *sandbox.ChangeSet
}

// State is what /tools says of a server.
type State string

// A server's states.
const (
	Stopped  State = "stopped"
	Running  State = "running"
	Crashed  State = "died, waiting to start again"
	Starting State = "starting"
)

// Server is one configured MCP server, started on first use.
type Server struct {
	cfg  config.MCP
	opts Options
	sb   Starter

	mu       sync.Mutex
	run      *running      // nil while stopped
	starting chan struct{} // closed when the start in progress ends
	inFlight int
	idle     clock.Timer
	used     uint64    // calls begun, so a stale idle timer stops nothing
	deaths   int       // in a row, for the back-off
	retryAt  time.Time // no start before
	// listed are the offered tools as the server last listed them,
	// kept while it is stopped, for the turns' offer; nil until it
	// first started.
	listed []Tool
	// told is set once the owner heard that the server died: once for
	// core's life, however often it dies after.
	told bool
}

type running struct {
	proc    *sandbox.Process
	session *sdk.ClientSession
	tools   []Tool
	// stopping is set when the server is stopped on purpose (idle,
	// deadline, Close): its end is no death.
	stopping bool
}

// New returns the server cfg describes, not started.
func New(cfg config.MCP, sb Starter, opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Tell == nil {
		opts.Tell = func(string) {}
	}
	if opts.Recycle == 0 {
		opts.Recycle = DefaultRecycle
	}
	opts.Log = opts.Log.With("mcp", cfg.Name)
	return &Server{cfg: cfg, opts: opts, sb: sb}
}

// Name is the server's name in the configuration.
func (s *Server) Name() string { return s.cfg.Name }

// State says whether the server runs.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.run != nil:
		return Running
	case s.starting != nil:
		return Starting
	case s.deaths > 0:
		return Crashed
	}
	return Stopped
}

// Listed returns the offered tools as the server last listed them,
// without starting it; false before it first started.
func (s *Server) Listed() ([]Tool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed, s.listed != nil
}

// Tools starts the server if it is not running and returns those of its
// tools the owner named, in the configuration's order. A named tool the
// server does not have is left out.
func (s *Server) Tools(ctx context.Context) ([]Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout.Duration)
	defer cancel()
	r, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer s.end()
	return r.tools, nil
}

// Call calls tool with args (a JSON object) and returns its result. An
// error means the call got no answer: the server could not start, does
// not offer the tool, died during the call, or did not answer by
// call_timeout and was killed; the error says which, for the owner and
// the model alike.
func (s *Server) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	if !slices.Contains(s.cfg.Tools, tool) {
		return Result{}, fmt.Errorf("MCP server %s: the owner does not offer its tool %q", s.cfg.Name, tool)
	}
	var arguments map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &arguments); err != nil {
			return Result{}, fmt.Errorf("MCP server %s: the arguments of %s are not a JSON object: %w", s.cfg.Name, tool, err)
		}
	}
	deadline := s.cfg.CallTimeout.Duration
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if s.cfg.Workspace == config.MCPWorkspaceReadWrite {
		return s.callCaptured(ctx, tool, arguments)
	}
	r, err := s.begin(ctx)
	if err != nil {
		return Result{}, err
	}
	defer s.end()
	res, err := r.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		if ctx.Err() == nil {
			// The connection ended: its server is ending, and its
			// container going, which takes a moment past the pipe's end.
			select {
			case <-r.proc.Done():
				exit, _ := r.proc.Wait()
				return Result{}, fmt.Errorf("MCP server %s ended during the call of %s (%s); it is started again on its next use", s.cfg.Name, tool, ending(exit))
			case <-time.After(teardown):
			}
		}
		if ctx.Err() != nil {
			s.stop(r)
			return Result{}, fmt.Errorf("MCP server %s did not answer %s within %v; it was stopped", s.cfg.Name, tool, deadline)
		}
		return Result{}, fmt.Errorf("MCP server %s: call of %s: %w", s.cfg.Name, tool, err)
	}
	s.mu.Lock()
	s.deaths = 0
	s.mu.Unlock()
	return resultText(res), nil
}

// callCaptured is a call of a server that may write the workspace: in a
// container of its own, started for this call and ended after it, whose
// view of the workspace is captured, so that what the server wrote comes
// back as the result's change set, applied to nothing. A long-lived
// server's writes could not be: its layer changes under it while it
// runs. The server starts for each call (its start, some 150 ms, is in
// call_timeout), so it keeps nothing between calls but what it wrote.
func (s *Server) callCaptured(ctx context.Context, tool string, arguments map[string]any) (Result, error) {
	spec := s.spec()
	spec.View, spec.Workspace = sandbox.Captured, s.opts.Workspace
	if deadline, ok := ctx.Deadline(); ok {
		spec.Limits.Wall = time.Until(deadline)
	}
	var result Result
	var connected, answered bool
	var talked error // the exchange's own failure, apart from the sandbox's
	res, err := s.sb.Talk(ctx, spec, func(stdin io.WriteCloser, stdout io.ReadCloser) error {
		client := sdk.NewClient(&sdk.Implementation{Name: "shelldon", Version: "1"}, &sdk.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
		session, err := client.Connect(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: MaxFrame}, nil)
		if err != nil {
			talked = fmt.Errorf("it did not answer as an MCP server: %w", err)
			return talked
		}
		defer session.Close()
		connected = true
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments})
		if err != nil {
			talked = err
			return talked
		}
		result, answered = resultText(res), true
		return nil
	})
	switch {
	case err != nil && !answered:
		res.Changes.Discard()
		switch {
		case ctx.Err() != nil:
			return Result{}, fmt.Errorf("MCP server %s did not answer %s within %v; it was stopped, and nothing it wrote was kept", s.cfg.Name, tool, s.cfg.CallTimeout.Duration)
		case connected:
			return Result{}, fmt.Errorf("MCP server %s ended during the call of %s (%s; %s); nothing it wrote was kept", s.cfg.Name, tool, ending(res), lastLine(res.Text()))
		case talked != nil:
			return Result{}, fmt.Errorf("MCP server %s could not take the call of %s: %w (it ended: %s; %s)", s.cfg.Name, tool, talked, ending(res), lastLine(res.Text()))
		}
		return Result{}, fmt.Errorf("MCP server %s could not start for the call of %s: %w", s.cfg.Name, tool, err)
	case err != nil:
		// Answered, but its container could not be taken down or read
		// as it should: what it wrote cannot be trusted to be whole.
		res.Changes.Discard()
		return Result{}, fmt.Errorf("MCP server %s answered %s, but what it wrote could not be collected, so nothing of it was kept: %w", s.cfg.Name, tool, err)
	case res.DiskFull:
		res.Changes.Discard()
		result.Text += "\n[what the server wrote was dropped: it filled the sandbox's disk, so a file of it may be cut short]"
	case res.Changes != nil && len(res.Changes.Changes) > 0:
		result.Changes = res.Changes
	default:
		res.Changes.Discard()
	}
	return result, nil
}

// Close stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	r := s.run
	s.mu.Unlock()
	if r != nil {
		s.stop(r)
	}
}

// begin counts a use and returns the running server, starting it first
// if need be; every begin is followed by an end.
func (s *Server) begin(ctx context.Context) (*running, error) {
	for {
		s.mu.Lock()
		if s.run != nil {
			s.inFlight++
			s.used++
			r := s.run
			s.mu.Unlock()
			return r, nil
		}
		if wait := s.starting; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("MCP server %s: still starting: %w", s.cfg.Name, ctx.Err())
			}
		}
		if wait := s.retryAt.Sub(s.opts.Clock.Now()); wait > 0 {
			s.mu.Unlock()
			if err := s.sleep(ctx, wait); err != nil {
				return nil, fmt.Errorf("MCP server %s died and is started again in %v, after this call's deadline", s.cfg.Name, wait.Round(time.Second))
			}
			continue
		}
		done := make(chan struct{})
		s.starting = done
		s.mu.Unlock()
		r, err := s.start(ctx)
		s.mu.Lock()
		s.starting = nil
		close(done)
		if err != nil {
			s.died()
			s.mu.Unlock()
			return nil, err
		}
		s.run, s.listed = r, r.tools
		s.mu.Unlock()
		go s.watch(r)
	}
}

// end ends a use; the last one arms the idle stop.
func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight--; s.inFlight > 0 || s.run == nil {
		return
	}
	if s.idle != nil {
		s.idle.Stop()
	}
	used, r := s.used, s.run
	s.idle = s.opts.Clock.AfterFunc(s.cfg.IdleStop.Duration, func() {
		s.mu.Lock()
		quiet := s.used == used && s.inFlight == 0 && s.run == r
		s.mu.Unlock()
		if quiet {
			s.opts.Log.Info("MCP server idle: stopped", "after", s.cfg.IdleStop.Duration)
			s.stop(r)
		}
	})
}

// sleep waits d on the server's clock, or until ctx ends.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if deadline, ok := ctx.Deadline(); ok && s.opts.Clock.Now().Add(d).After(deadline) {
		return context.DeadlineExceeded
	}
	woken := make(chan struct{})
	t := s.opts.Clock.AfterFunc(d, func() { close(woken) })
	defer t.Stop()
	select {
	case <-woken:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// died records a death (or a failed start): the next start waits.
// Called with s.mu held.
func (s *Server) died() {
	s.deaths++
	backoff := min(minBackoff<<min(s.deaths-1, 20), maxBackoff)
	s.retryAt = s.opts.Clock.Now().Add(backoff)
}

// watch waits for the server's end; one not asked for is a death, and
// the owner hears of the first of a run of them.
func (s *Server) watch(r *running) {
	exit, err := r.proc.Wait()
	r.session.Close()
	s.mu.Lock()
	if s.run == r {
		s.run = nil
	}
	if r.stopping || exit.TimedOut {
		s.mu.Unlock()
		if exit.TimedOut {
			s.opts.Log.Info("MCP server recycled at its time limit", "after", s.opts.Recycle)
		}
		return
	}
	s.died()
	tell := !s.told
	s.told = true
	s.mu.Unlock()
	s.opts.Log.Warn("MCP server died", "how", ending(exit), "err", err, "stderr", exit.Text())
	if tell {
		s.opts.Tell(fmt.Sprintf("The MCP server %s stopped on its own (%s). It is started again on its next use, after a pause that grows if it keeps stopping.", s.cfg.Name, ending(exit)))
	}
}

// stop kills the server on purpose and waits for its container to go.
func (s *Server) stop(r *running) {
	s.mu.Lock()
	r.stopping = true
	if s.run == r {
		// The next use starts a fresh server at once, not the one going
		// (its watcher, which would let go of it, may not have run yet).
		s.run = nil
	}
	s.mu.Unlock()
	r.session.Close()
	r.proc.Stop()
}

// ending words how a server's container ended.
func ending(exit sandbox.Result) string {
	switch {
	case exit.OutOfMemory:
		return "out of memory"
	case exit.TimedOut:
		return "past its time limit"
	case exit.ExitCode == -1:
		return "killed"
	}
	return fmt.Sprintf("exit status %d", exit.ExitCode)
}

// start starts the server's container, opens the MCP session over its
// stdio and lists its tools.
func (s *Server) start(ctx context.Context) (_ *running, err error) {
	spec := s.spec()
	begun := s.opts.Clock.Now()
	proc, err := s.sb.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s could not start: %w", s.cfg.Name, err)
	}
	r := &running{proc: proc}
	defer func() {
		if err != nil {
			r.stopping = true
			proc.Stop()
		}
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "shelldon", Version: "1"}, &sdk.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	r.session, err = client.Connect(ctx, &sdk.IOTransport{Reader: proc.Stdout, Writer: proc.Stdin, MaxLineLength: MaxFrame}, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s started but did not answer as an MCP server: %w", s.cfg.Name, s.why(ctx, proc, err))
	}
	listed, err := r.session.ListTools(ctx, nil)
	if err != nil {
		r.session.Close()
		return nil, fmt.Errorf("MCP server %s did not list its tools: %w", s.cfg.Name, s.why(ctx, proc, err))
	}
	r.tools = s.offered(listed.Tools)
	s.opts.Log.Info("MCP server started", "took", s.opts.Clock.Now().Sub(begun).Round(time.Millisecond), "tools", len(r.tools))
	return r, nil
}

// why adds to err how the server ended, when it has or is ending (its
// pipe closes a moment before its container is gone).
func (s *Server) why(ctx context.Context, proc *sandbox.Process, err error) error {
	if ctx.Err() != nil {
		return err
	}
	select {
	case <-proc.Done():
		exit, _ := proc.Wait()
		return fmt.Errorf("%w (it ended: %s; %s)", err, ending(exit), lastLine(exit.Text()))
	case <-time.After(teardown):
		return err
	}
}

// lastLine is the last line of a server's stderr, for an error.
func lastLine(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		return "nothing on stderr"
	}
	return "stderr: " + text
}

// spec is the server's container.
func (s *Server) spec() sandbox.Spec {
	spec := sandbox.Spec{
		Argv:      append([]string{s.cfg.Command}, s.cfg.Args...),
		Workspace: s.opts.Empty,
		View:      sandbox.ReadOnly,
		Network:   s.cfg.Egress,
		Env:       s.cfg.Env,
		Limits: sandbox.Limits{
			Memory: int64(s.cfg.Memory),
			CPU:    s.cfg.CPU,
			Tasks:  s.cfg.Tasks,
			Wall:   s.opts.Recycle,
			Output: stderrTail,
		},
	}
	if s.cfg.Workspace == config.MCPWorkspaceReadOnly || s.cfg.Workspace == config.MCPWorkspaceReadWrite {
		// A server that may write lists its tools, as any does, in a
		// container that sees the workspace read-only; its calls run in
		// containers of their own (callCaptured).
		spec.Workspace = s.opts.Workspace
	}
	if s.cfg.Directory != "" {
		spec.Binds = []sandbox.Bind{{Source: s.cfg.Directory, Target: config.MCPDirectory}}
	}
	return spec
}

// offered keeps, of the tools a server listed, those the owner named,
// in the configuration's order, each bounded.
func (s *Server) offered(listed []*sdk.Tool) []Tool {
	var tools []Tool
	for _, name := range s.cfg.Tools {
		i := slices.IndexFunc(listed, func(t *sdk.Tool) bool { return t != nil && t.Name == name })
		if i < 0 {
			s.opts.Log.Warn("MCP server does not have a tool the configuration offers", "tool", name)
			continue
		}
		t := listed[i]
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || len(schema) > MaxSchema || string(schema) == "null" {
			s.opts.Log.Warn("MCP tool's input schema left out", "tool", name, "bytes", len(schema), "err", err)
			schema = json.RawMessage(`{"type":"object"}`)
		}
		tools = append(tools, Tool{
			Name:        name,
			Offered:     s.cfg.ToolName(name),
			Description: cut(t.Description, MaxDescription),
			Schema:      schema,
			ReadOnly:    s.cfg.IsReadOnly(name),
			Claims:      claims(t.Annotations),
		})
	}
	return tools
}

// claims words a tool's annotations for the owner's card ("read-only,
// destructive"), which introduces them as the server's claims.
func claims(a *sdk.ToolAnnotations) string {
	if a == nil {
		return ""
	}
	var said []string
	if a.ReadOnlyHint {
		said = append(said, "read-only")
	}
	if a.DestructiveHint != nil && *a.DestructiveHint {
		said = append(said, "destructive")
	}
	if a.OpenWorldHint != nil && *a.OpenWorldHint {
		said = append(said, "reaches outside")
	}
	if len(said) == 0 {
		return ""
	}
	return strings.Join(said, ", ")
}

// resultText is a call's result as bounded text: its text content in
// order, other content named by its kind, then the structured content
// as JSON unless the text already holds it.
func resultText(res *sdk.CallToolResult) Result {
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch c := c.(type) {
		case *sdk.TextContent:
			b.WriteString(c.Text)
		case *sdk.ImageContent:
			fmt.Fprintf(&b, "[an image, %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
		case *sdk.AudioContent:
			fmt.Fprintf(&b, "[audio, %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
		case *sdk.ResourceLink:
			fmt.Fprintf(&b, "[a link to %s]", c.URI)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else {
				b.WriteString("[an embedded resource, not shown]")
			}
		default:
			b.WriteString("[content of a kind shelldon does not show]")
		}
		if b.Len() > MaxResult {
			break
		}
	}
	// The structured content is often the answer itself, the text
	// content a word about it ("Graph read successfully").
	if res.StructuredContent != nil && b.Len() <= MaxResult {
		if data, err := json.Marshal(res.StructuredContent); err == nil && !strings.Contains(b.String(), string(data)) {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.Write(data)
		}
	}
	return Result{Text: cut(b.String(), MaxResult), IsError: res.IsError}
}

// cut bounds text to max bytes of valid UTF-8, saying what it cut.
func cut(text string, max int) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if len(text) <= max {
		return text
	}
	kept := strings.ToValidUTF8(text[:max], "")
	return fmt.Sprintf("%s\n[… %d more bytes cut]", kept, len(text)-len(kept))
}
