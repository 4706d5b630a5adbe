package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/fetch"
	"shelldon/daemon/mood"
	"shelldon/daemon/state"
	"shelldon/daemon/state/atomicfile"
	"shelldon/daemon/tools"
	"shelldon/policy"
	"shelldon/sandbox"
)

// Answers to the owner about a decision that could not be carried out.
const (
	msgHeld    = "Got it. I'm in the middle of something; I'll do that as soon as I finish."
	msgUnknown = "Nothing is waiting for that answer (it was decided already, or never asked)."
	msgExpired = "That request expired, so I did nothing. Ask me again if you still want it."
)

// heldDecision is a decision that came while a turn ran; it is taken up
// when the turn ends, before any catch-up turn.
type heldDecision struct {
	decision contracts.Decision
	from     Origin
}

// park keeps a turn's RISKY call for the owner: core checks the call
// itself (the worker is not trusted to have), stores it with what it
// will run, and shows the owner exactly that, with the policy's note.
func (c *Core) park(ctx context.Context, t *activeTurn, req contracts.RequestToolApproval) error {
	checked, err := c.checkRisky(req.Call)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	p := state.PendingApproval{
		Turn: t.id, Call: req.Call, Summary: checked.Note, Messages: req.Messages,
		Transport: t.admission.Origin.Transport, Chat: t.admission.Origin.Chat,
		Created: now, Expires: now.Add(c.cfg.Turn.ApprovalExpiry.Duration),
	}
	if err := c.store.ParkApproval(ctx, p); err != nil {
		return err
	}
	c.log.Info("asked the owner", contracts.AuditEvent, contracts.EventApprovalRequested, "turn", t.id,
		"tool", req.Call.Name, "note", checked.Note, "detail", checked.Detail)
	c.ask(Origin{Transport: p.Transport, Chat: p.Chat}, contracts.ApprovalRequest{
		Turn: t.id, Tool: req.Call.Name, Note: checked.Note, Detail: checked.Detail, Expires: p.Expires,
	})
	return nil
}

// ask shows the owner a request, with its buttons, where they are.
func (c *Core) ask(to Origin, req contracts.ApprovalRequest) {
	req.Chat = to.Chat
	env, err := contracts.NewEnvelope(contracts.KindApprovalRequest, req.Turn, req)
	if err == nil {
		env.To = to.Transport
		err = c.hub.Route(env)
	}
	if err != nil {
		c.log.Warn("the request reached no transport; it stays parked (/pending shows it again)", "turn", req.Turn, "err", err)
	}
}

// announceClosed tells every transport that a request is settled, so no
// button for it stays to be tapped.
func (c *Core) announceClosed(turn, outcome string) {
	env, err := contracts.NewEnvelope(contracts.KindApprovalClosed, turn, contracts.ApprovalClosed{Turn: turn, Outcome: outcome, At: c.clock.Now()})
	if err == nil {
		err = c.hub.Route(env)
	}
	if err != nil {
		c.log.Info("no transport heard that a request is settled", "turn", turn, "outcome", outcome, "err", err)
	}
}

// checkRisky checks a parked call as the tools do and accepts only a
// call that asks.
func (c *Core) checkRisky(call contracts.ToolCall) (tools.Checked, error) {
	tool, ok := c.toolbox().Lookup(call.Name)
	if !ok {
		return tools.Checked{}, fmt.Errorf("there is no tool %q", call.Name)
	}
	checked, err := tool.Check(call.Args)
	if err != nil {
		return tools.Checked{}, err
	}
	if checked.Tier != contracts.TierRisky {
		return tools.Checked{}, fmt.Errorf("%s with these arguments does not need the owner", call.Name)
	}
	return checked, nil
}

// handleDecision takes the owner's answer to a parked call. It comes
// before the arbiter. A promotion needs no worker and is decided at once;
// a call's decision needs the turn slot, so during a turn it is held and
// taken up when the turn ends (the owner need not tap again).
func (c *Core) handleDecision(ctx context.Context, env contracts.Envelope) {
	d, err := readDecision(env)
	if err != nil {
		c.log.Warn("dropped an unreadable decision", "from", env.Sender, "err", err)
		return
	}
	from := Origin{Transport: env.Sender, Chat: d.Chat}
	if strings.HasPrefix(d.Turn, promotePrefix) {
		c.decide(ctx, d, from)
		return
	}
	if !c.arb.claim() {
		c.held = append(c.held, heldDecision{decision: d, from: from})
		c.log.Info("a decision waits for the running turn to end", "turn", d.Turn, "running", c.turnID())
		c.replyTo(from, contracts.Outbound{Text: msgHeld})
		return
	}
	if !c.decide(ctx, d, from) {
		c.release(ctx)
	}
}

// decide takes the parked request a decision is for and carries the
// decision out. For a call it reports whether a resumed turn is on its
// way, which then holds the turn slot the caller claimed.
func (c *Core) decide(ctx context.Context, d contracts.Decision, from Origin) (resuming bool) {
	tell := func(text string) { c.replyTo(from, contracts.Outbound{Text: text}) }
	p, err := c.store.TakeApproval(ctx, d.Turn, c.clock.Now())
	log := c.log.With(contracts.AuditEvent, contracts.EventApprovalDecided, "turn", d.Turn, "approve", d.Approve)
	if err != nil {
		switch {
		case errors.Is(err, state.ErrApprovalExpired):
			log.Info("decision on an expired request", "decision", "expired")
			tell(msgExpired)
			c.announceClosed(d.Turn, contracts.ApprovalExpired)
		case errors.Is(err, state.ErrNoApproval):
			log.Info("decision on nothing parked", "decision", "unknown")
			tell(msgUnknown)
			c.announceClosed(d.Turn, contracts.ApprovalGone)
		default:
			log.Error("taking the parked call failed", "err", err)
			tell(msgUnknown)
		}
		return false
	}
	decision := contracts.ApprovalDenied
	if d.Approve {
		decision = contracts.ApprovalApproved
	}
	log.Info("the owner decided", "decision", decision, "tool", p.Call.Name)
	c.announceClosed(d.Turn, decision)
	switch {
	case strings.HasPrefix(d.Turn, promotePrefix) && d.Approve:
		c.feel(mood.Promoted)
	case d.Approve:
		c.feel(mood.Approved)
	default:
		c.feel(mood.Denied)
	}
	if strings.HasPrefix(d.Turn, promotePrefix) {
		tell(c.promote(p, d.Approve, from))
		return false
	}
	go func() {
		answer := contracts.DeniedByOwner
		if d.Approve {
			answer = c.carryOut(ctx, p)
		}
		c.post(event{kind: evResume, parked: p, answer: answer, decision: decision})
	}()
	return true
}

// readDecision reads a decision leniently: it needs the turn, and
// anything but an explicit "approve": true — a missing, misspelt or
// mistyped answer — counts as a denial.
func readDecision(env contracts.Envelope) (contracts.Decision, error) {
	var raw struct {
		Turn    string          `json:"turn"`
		Approve json.RawMessage `json:"approve"`
		Chat    string          `json:"chat"`
	}
	if err := json.Unmarshal(env.Body, &raw); err != nil {
		return contracts.Decision{}, err
	}
	if raw.Turn == "" {
		return contracts.Decision{}, errors.New("a decision without a turn")
	}
	return contracts.Decision{Turn: raw.Turn, Chat: raw.Chat, Approve: string(raw.Approve) == "true"}, nil
}

// expireApprovals drops the parked calls nobody decided on in time and
// tells the owner of each.
func (c *Core) expireApprovals(ctx context.Context) {
	expired, err := c.store.ExpireApprovals(ctx, c.clock.Now())
	if err != nil {
		c.log.Error("expiring parked calls", "err", err)
	}
	for _, p := range expired {
		c.log.Info("a parked call expired", contracts.AuditEvent, contracts.EventApprovalDecided, "turn", p.Turn, "tool", p.Call.Name, "decision", "expired")
		c.announceClosed(p.Turn, contracts.ApprovalExpired)
		c.feel(mood.Expired)
		c.replyTo(Origin{Transport: p.Transport, Chat: p.Chat}, contracts.Outbound{
			Text: fmt.Sprintf("Nobody answered my request to use %s (%s) within %v, so I dropped it.", p.Call.Name, p.Summary, c.cfg.Turn.ApprovalExpiry.Duration),
		})
	}
}

// release gives up the turn slot: to a decision held during the turn if
// one is waiting (it came first), else to the catch-up turn of what
// arrived meanwhile, else to the next message.
func (c *Core) release(ctx context.Context) {
	for len(c.held) > 0 {
		h := c.held[0]
		c.held = c.held[1:]
		if c.decide(ctx, h.decision, h.from) {
			return
		}
	}
	if next, ok := c.arb.complete(); ok {
		c.startTurn(ctx, next)
	}
}

// resume starts the turn that takes up a parked conversation with the
// answer to its call.
func (c *Core) resume(ctx context.Context, ev event) {
	p := ev.parked
	c.startTurn(ctx, Admission{
		Origin: Origin{Transport: p.Transport, Chat: p.Chat},
		Resume: &contracts.Resume{
			Messages: p.Messages,
			Answer:   contracts.Message{Role: contracts.ChatTool, ToolCallID: p.Call.ID, Content: ev.answer},
		},
		Preview: fmt.Sprintf("(%s %s)", ev.decision, p.Call.Name),
	})
}

// carryOut runs an approved call — core's own parked copy, checked again
// now, since the workspace may have changed in the hour it waited — and
// says what happened, for the model.
func (c *Core) carryOut(ctx context.Context, p state.PendingApproval) string {
	checked, err := c.checkRisky(p.Call)
	if err != nil {
		return "error: the approved call no longer passes the checks: " + err.Error()
	}
	jail := policy.Jail{Root: c.layout.Workspace(), Vault: c.layout.Vault()}
	if p.Call.Name == "http_get" {
		return c.fetch(ctx, checked.URL)
	}
	before, err := c.snapshotTests(ctx)
	if err != nil {
		return "error: could not read the workspace's tests before the change: " + err.Error()
	}
	answer := c.change(ctx, jail, p.Call.Name, checked)
	guard, err := c.guardTests(ctx, before)
	if err != nil {
		c.log.Error("checking the tests after a change", "err", err)
		return answer + "\n(the tests could not be checked after the change: " + err.Error() + ")"
	}
	if guard != "" {
		c.log.Warn("put back rewritten tests", "turn", p.Turn, "what", guard)
		return answer + "\n" + guard
	}
	return answer
}

// change carries out an approved call that may change the workspace.
func (c *Core) change(ctx context.Context, jail policy.Jail, tool string, checked tools.Checked) string {
	switch tool {
	case "write_file":
		return writeJailed(jail, checked.Path, []byte(checked.Content))
	case "edit_file":
		path, err := jail.Resolve(checked.Path)
		if err != nil {
			return "error: " + err.Error()
		}
		old, err := os.ReadFile(path)
		if err != nil {
			return "error: " + err.Error()
		}
		edited, err := tools.ApplyEdit(string(old), checked.Old, checked.New)
		if err != nil {
			return "error: " + err.Error()
		}
		return writeJailed(jail, checked.Path, []byte(edited))
	case "run_shell":
		// Only git's remote verbs get the network; a shell command that
		// wants it (curl, pip) runs without.
		checked.Network = false
		return c.runCaptured(ctx, jail, checked)
	case "git":
		return c.runCaptured(ctx, jail, checked)
	}
	return fmt.Sprintf("error: core does not carry out %s", tool)
}

// fetch carries out an approved http_get through the guarded client.
func (c *Core) fetch(ctx context.Context, url string) string {
	res, err := fetch.Getter{}.Get(ctx, url)
	if err != nil {
		return "error: " + err.Error()
	}
	body := strings.ToValidUTF8(string(res.Body), "\uFFFD")
	if res.Truncated {
		body += "\n[… cut: the body was longer]"
	}
	return fmt.Sprintf("HTTP %d %s\n%s", res.Status, res.ContentType, body)
}

// writeJailed writes data to a workspace path atomically, through the
// jail, and says so.
func writeJailed(jail policy.Jail, path string, data []byte) string {
	resolved, err := jail.Resolve(path)
	if err != nil {
		return "error: " + err.Error()
	}
	if err := atomicfile.WriteFile(resolved, data, 0o644); err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(data), path)
}

// runCaptured runs an approved command in the sandbox over a captured
// view, applies what it changed through the jail, and reports both.
func (c *Core) runCaptured(ctx context.Context, jail policy.Jail, checked tools.Checked) string {
	if c.opts.Sandbox == nil {
		return fmt.Sprintf("error: commands cannot run on this pet right now (%v)", c.opts.NoSandbox)
	}
	res, err := c.opts.Sandbox.Run(ctx, sandbox.Spec{
		Argv: checked.Argv, Workspace: c.layout.Workspace(), View: sandbox.Captured, Network: checked.Network,
	})
	if err != nil {
		return "error: the sandbox could not run it: " + err.Error()
	}
	out := describeRun(res)
	if res.Changes == nil {
		return out
	}
	defer res.Changes.Discard()
	report, err := res.Changes.Apply(jail)
	var lines []string
	for _, ch := range report.Applied {
		lines = append(lines, fmt.Sprintf("%s %s", ch.Kind, ch.Path))
	}
	for _, r := range report.Refused {
		lines = append(lines, fmt.Sprintf("refused %s: %s", r.Change.Path, r.Reason))
	}
	if err != nil {
		lines = append(lines, "applying stopped: "+err.Error())
	}
	if len(lines) == 0 {
		return out
	}
	return out + "\nchanges:\n" + strings.Join(lines, "\n")
}
