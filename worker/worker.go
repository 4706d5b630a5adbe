package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"shelldon/bus"
	"shelldon/clock"
	"shelldon/contracts"
	"shelldon/daemon/procmem"
	"shelldon/daemon/statedir"
	"shelldon/daemon/visible"
	"shelldon/tools"
	"shelldon/worker/skills"
)

// Options say which turn to serve and where.
type Options struct {
	Turn     string
	Socket   string
	StateDir string
	MaxFrame int
	// Evaluator is the command python_eval starts for each expression:
	// `shelldon-worker eval`.
	Evaluator []string
	// Log reports the turn's progress and what the audit trail keeps of
	// it (an http_get the address rules refused); nil discards it.
	Log *slog.Logger
}

// inputTimeout bounds the wait for core's turn input after joining.
const inputTimeout = 5 * time.Second

// Run serves one turn. It returns an error only when the turn could not
// be reported to core at all; a failed turn is reported as a failed
// Result, which is not an error of Run.
func Run(ctx context.Context, opts Options) error {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := bus.Dial(ctx, opts.Socket, contracts.Hello{Role: contracts.RoleWorker, Turn: opts.Turn}, opts.MaxFrame)
	if err != nil {
		return fmt.Errorf("worker for turn %s: %w", opts.Turn, err)
	}
	defer conn.Close()
	frames := make(chan contracts.Envelope)
	go func() {
		defer close(frames)
		for {
			env, err := conn.Recv()
			if err != nil {
				return
			}
			frames <- env
		}
	}()

	var in contracts.TurnInput
	select {
	case env, ok := <-frames:
		if !ok || env.Kind != contracts.KindTurnInput {
			return fmt.Errorf("worker for turn %s: core sent no turn input", opts.Turn)
		}
		if err := env.Decode(&in); err != nil {
			return fmt.Errorf("worker for turn %s: %w", opts.Turn, err)
		}
		in.Deadline = contracts.OnThisClock(in.Deadline)
	case <-time.After(inputTimeout):
		return fmt.Errorf("worker for turn %s: no turn input within %v", opts.Turn, inputTimeout)
	}

	testHook(in.Text, log)
	res := serve(ctx, statedir.Layout{Root: opts.StateDir}, in, log, bridge{
		complete: func(job contracts.Job) (contracts.Completion, error) {
			return ask(ctx, conn, frames, opts.Turn, job)
		},
		exec: func(call contracts.ToolCall) (string, error) {
			r, err := exchange(ctx, conn, frames, opts.Turn, contracts.ExecRequest{Call: call}, call.ID, in.Deadline)
			if err == nil && !r.OK {
				err = errors.New(r.Content)
			}
			return r.Content, err
		},
		step: func(call contracts.ToolCall) {
			// Progress is a courtesy to the owner: a step core did not
			// hear of changes nothing of the turn.
			env, err := contracts.NewEnvelope(contracts.KindStep, opts.Turn, contracts.Step{Call: call})
			if err == nil {
				err = conn.Send(env)
			}
			if err != nil {
				log.Info("telling core of a step failed", "turn", opts.Turn, "tool", call.Name, "err", err)
			}
		},
		runTests: func() (bool, string, error) {
			r, err := exchange(ctx, conn, frames, opts.Turn, contracts.ExecRequest{Tests: true}, "", in.Deadline)
			return r.OK, r.Content, err
		},
		evaluator: opts.Evaluator,
	})
	res.PeakRSS, _ = procmem.Self("VmHWM")
	tokens := res.Usage.Total()
	log.Info(fmt.Sprintf("turn %s: ok=%v stop=%s model=%v tokens=%d+%d peak=%dKiB err=%q", opts.Turn, res.OK, res.Stop, res.ModelTime,
		tokens.PromptTokens, tokens.CompletionTokens, res.PeakRSS>>10, res.Error))
	env, err := contracts.NewEnvelope(contracts.KindResult, opts.Turn, res)
	if err != nil {
		return fmt.Errorf("worker for turn %s: %w", opts.Turn, err)
	}
	if err := conn.Send(env); err != nil {
		return fmt.Errorf("worker for turn %s: send result: %w", opts.Turn, err)
	}
	return nil
}

// exchange asks core to run something in the sandbox — one call, or the
// workspace's tests — and waits for the answer with id until the turn's
// deadline.
func exchange(ctx context.Context, conn *bus.Conn, frames <-chan contracts.Envelope, turn string, req contracts.ExecRequest, id string, deadline time.Time) (contracts.ExecResult, error) {
	env, err := contracts.NewEnvelope(contracts.KindExec, turn, req)
	if err != nil {
		return contracts.ExecResult{}, err
	}
	if err := conn.Send(env); err != nil {
		return contracts.ExecResult{}, fmt.Errorf("send exec request: %w", err)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return contracts.ExecResult{}, errors.New("core did not answer before the turn's time ran out")
		case env, ok := <-frames:
			if !ok {
				return contracts.ExecResult{}, errors.New("core closed the bus")
			}
			var r contracts.ExecResult
			if env.Kind != contracts.KindExecResult || env.Decode(&r) != nil || r.CallID != id {
				continue
			}
			return r, nil
		}
	}
}

// errBudget is the failure of a turn whose budget W ran out.
var errBudget = errors.New("the worker's time budget ran out")

// ask sends one job to the broker and waits for its completion until the
// job's deadline. While the answer streams, core hears what the owner may
// see of it (DraftOf), each time that changes.
func ask(ctx context.Context, conn *bus.Conn, frames <-chan contracts.Envelope, turn string, job contracts.Job) (contracts.Completion, error) {
	env, err := contracts.NewEnvelope(contracts.KindJob, turn, job)
	if err != nil {
		return contracts.Completion{}, err
	}
	if err := conn.Send(env); err != nil {
		return contracts.Completion{}, fmt.Errorf("send job: %w", err)
	}
	ctx, cancel := context.WithDeadline(ctx, job.Deadline)
	defer cancel()
	var drafted string // the draft core heard last
	for {
		select {
		case <-ctx.Done():
			return contracts.Completion{}, errBudget
		case env, ok := <-frames:
			if !ok {
				return contracts.Completion{}, errors.New("core closed the bus")
			}
			if env.Kind == contracts.KindStream {
				drafted = draft(conn, turn, env, drafted)
				continue
			}
			if env.Kind != contracts.KindCompletion {
				continue
			}
			var c contracts.Completion
			if err := env.Decode(&c); err != nil {
				return contracts.Completion{}, err
			}
			return c, nil
		}
	}
}

// draft tells core what the owner may see of the answer a stream says
// so far, unless that is nothing or what core heard last; it returns what
// core heard last. A draft is a courtesy to the owner: one core does not
// hear changes nothing of the turn.
func draft(conn *bus.Conn, turn string, env contracts.Envelope, last string) string {
	var so contracts.Stream
	if env.Decode(&so) != nil {
		return last
	}
	text := DraftOf(so.Text)
	if text == "" || text == last {
		return last
	}
	out, err := contracts.NewEnvelope(contracts.KindDraft, turn, contracts.Draft{Turn: turn, Text: text})
	if err == nil && conn.Send(out) == nil {
		return text
	}
	return last
}

// serve does the turn's work between input and result: prompt, the agent
// loop with the model and the tools, parse. complete is the round trip to
// the broker.
func serve(ctx context.Context, layout statedir.Layout, in contracts.TurnInput, log *slog.Logger, b bridge) contracts.Result {
	fail := func(format string, args ...any) contracts.Result {
		return contracts.Result{OK: false, Error: fmt.Sprintf(format, args...)}
	}
	registry, err := layout.LoadFaces()
	var notes []string
	if err != nil {
		notes = append(notes, fmt.Sprintf("face registry: %v", err))
	}
	var messages []contracts.Message
	if in.Resume != nil {
		// The owner decided on the parked call: the conversation goes on
		// from there, with the call answered.
		messages = append(append([]contracts.Message{}, in.Resume.Messages...), in.Resume.Answer)
	} else {
		directive, err := layout.ReadDirective()
		if err != nil {
			return fail("read the directive: %v", err)
		}
		about, err := layout.ReadAbout()
		if err != nil {
			return fail("read about.md: %v", err)
		}
		found, problems, err := skills.List(layout.Workspace())
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, p := range problems {
			notes = append(notes, "skills: "+p)
		}
		messages = BuildPrompt(PromptInput{
			Directive: directive,
			About:     about,
			Faces:     registry.Names(),
			History:   in.History,
			Text:      in.Text,
			Now:       time.Now(),
			Mood:      in.Mood,
			MoodWhy:   in.MoodWhy,
			Scheduled: in.Scheduled,
			ByName:    in.ByNameOnly,
			Skills:    skills.Section(found),
		})
		// The owner's photo goes with their words, the last message.
		messages[len(messages)-1].Images = in.Images
	}
	toolbox := tools.Builtins(tools.Env{Workspace: layout.Workspace(), Vault: layout.Vault(), Clock: clock.Real{}, Evaluator: b.evaluator}).WithSelfCoded(in.SelfCoded).WithMCP(in.MCP)
	offer, held := offered(toolbox, in.Approvals, in.ByNameOnly)
	loop := agentLoop{
		tools:    toolbox,
		offer:    offer,
		held:     held,
		complete: b.complete,
		exec:     b.exec,
		step:     b.step,
		canPark:  in.Approvals,
		changed:  changedWorkspace(in.Resume),
		runTests: b.runTests,
		now:      time.Now,
		deadline: in.Deadline,
		maxCalls: in.MaxModelCalls,
		log:      log,
	}
	end := loop.run(ctx, messages)
	var res contracts.Result
	switch {
	case end.Err != nil:
		res = fail("%v", end.Err)
		res.OwnerFix = end.OwnerFix
	case end.Park != nil:
		res = parked(*end.Park)
	default:
		res = ParseReply(end.Text, registry)
	}
	res.ModelTime, res.Stop, res.Usage = end.ModelTime, end.Stop, end.Usage
	res.Notes = append(notes, res.Notes...)
	return res
}

// changedWorkspace reports whether a resumed conversation's approved call
// was carried out (and so may have changed the workspace): not denied,
// not failed.
func changedWorkspace(r *contracts.Resume) bool {
	if r == nil {
		return false
	}
	a := r.Answer.Content
	return a != contracts.DeniedByOwner && !strings.HasPrefix(a, "error:")
}

// bridge is how a turn reaches beyond the worker: the broker for
// completions, core for sandboxed commands, a child process of its own
// for each python_eval.
type bridge struct {
	complete  func(contracts.Job) (contracts.Completion, error)
	exec      func(contracts.ToolCall) (string, error)
	step      func(contracts.ToolCall)
	runTests  func() (passed bool, report string, err error)
	evaluator []string
}

// offered lists the tools a turn can use: all of them where core can ask
// the owner about RISKY calls; otherwise the ones that run in the worker,
// and run_shell, whose read-only commands core runs in the sandbox.
// Offering the other RISKY tools without approvals would have the pet
// ask for what nobody can grant. The self-coded tools core named in
// byName are held back, for the prompt to name.
func offered(r *tools.Registry, approvals bool, byName []string) (offer, held []contracts.ToolDefinition) {
	for _, d := range r.Definitions() {
		t, _ := r.Lookup(d.Name)
		_, local := t.(tools.Local)
		switch {
		case !approvals && !local && d.Name != "run_shell":
		case slices.Contains(byName, d.Name) && !r.IsBuiltin(d.Name):
			held = append(held, d)
		default:
			offer = append(offer, d)
		}
	}
	return offer, held
}

// parked is the result of a turn that waits for the owner: a reply that
// says what the pet wants to do, and the op that parks the call.
func parked(req contracts.RequestToolApproval) contracts.Result {
	return contracts.Result{
		OK: true,
		// The note is the policy's words about what the model chose, a
		// path among them: shown as the text it is.
		Payload: fmt.Sprintf("I'd like to use %s: %s. Shall I?", visible.Line(req.Call.Name), visible.Line(req.Summary)),
		Ops:     []contracts.Op{{Body: req}},
	}
}
