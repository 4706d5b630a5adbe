package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"shelldon/contracts"
	"shelldon/daemon/selfcode"
	"shelldon/daemon/state"
	"shelldon/daemon/state/atomicfile"
	"shelldon/daemon/tools"
)

// A promotion waits for the owner like a parked call, in the same table
// under the same rules (expiry, taken once, surviving a restart), keyed
// promote-<stem> and carrying a call to this name, which no tool has.
const (
	promotePrefix = "promote-"
	promoteCall   = "promote_tool"
)

// propose stages a tool the model wrote and runs the gate on it, away
// from the turn loop; a pass asks the owner to keep it, a failure
// discards it and says why.
func (c *Core) propose(ctx context.Context, t *activeTurn, p contracts.ProposeTool) error {
	if c.opts.Sandbox == nil {
		return fmt.Errorf("no sandbox to test a new tool in (%v)", c.opts.NoSandbox)
	}
	staged, err := selfcode.Stage(c.layout.ToolsStaging(), p.Name, p.Code, p.Test, c.tools.BuiltinNames())
	if err != nil {
		return err
	}
	origin := t.admission.Origin
	live, _ := os.ReadFile(filepath.Join(c.layout.Tools(), "test_"+staged.Stem+".py"))
	c.log.Info("testing a proposed tool", contracts.AuditEvent, contracts.EventPromotion, "turn", t.id, "tool", staged.Stem, "decision", "gate")
	go func() {
		v, err := selfcode.Gate(ctx, c.opts.Sandbox, staged, string(live))
		if err == nil && v.Passed {
			err = c.parkPromotion(ctx, staged, v, origin)
			if err == nil {
				return
			}
		}
		staged.Discard()
		why := fmt.Sprintf("the gate could not run: %v", err)
		if err == nil {
			why = fmt.Sprintf("it failed the %s: %s", v.Step, v.Why)
			if v.Output != "" {
				why += "\n" + v.Output
			}
		}
		c.log.Info("a proposed tool failed the gate", contracts.AuditEvent, contracts.EventPromotion, "tool", staged.Stem, "decision", "failed", "why", why)
		c.replyTo(origin, contracts.Outbound{Text: fmt.Sprintf("I wrote a tool, %s, but %s", staged.Stem, why)})
	}()
	return nil
}

// parkPromotion asks the owner whether to keep a tool that passed the
// gate, showing the code, the test, the gate's output and any import it
// could not verify.
func (c *Core) parkPromotion(ctx context.Context, s selfcode.Staged, v selfcode.Verdict, origin Origin) error {
	args, _ := json.Marshal(promotionArgs{Stem: s.Stem, Description: v.Description, Schema: v.Schema, Unverifiable: v.Unverifiable})
	now := c.clock.Now()
	p := state.PendingApproval{
		Turn:    promotePrefix + s.Stem,
		Call:    contracts.ToolCall{ID: "promote", Name: promoteCall, Args: string(args)},
		Summary: "keep the new tool " + s.Stem,
		// The table wants the conversation a call parked in; a promotion
		// has none, so it carries one line saying what it is.
		Messages:  []contracts.Message{{Role: contracts.ChatAssistant, Content: "proposed the tool " + s.Stem}},
		Transport: origin.Transport, Chat: origin.Chat,
		Created: now, Expires: now.Add(c.cfg.Turn.ApprovalExpiry.Duration),
	}
	req, err := c.promotionRequest(p, lastLines(v.Output, 3))
	if err != nil {
		return err
	}
	c.store.TakeApproval(ctx, p.Turn, now) // an older proposal of the same tool gives way
	if err := c.store.ParkApproval(ctx, p); err != nil {
		return err
	}
	c.ask(origin, req)
	c.log.Info("asked the owner to keep a tool", contracts.AuditEvent, contracts.EventPromotion, "tool", s.Stem, "decision", "asked")
	return nil
}

// promotionArgs are a parked promotion's arguments: what the gate found
// out about the tool.
type promotionArgs struct {
	Stem         string         `json:"stem"`
	Description  string         `json:"description"`
	Schema       map[string]any `json:"schema"`
	Unverifiable []string       `json:"unverifiable,omitempty"`
}

// promotionRequest shows the owner a staged tool: its code and test as
// they are in staging, what the gate said, and any import it could not
// verify.
func (c *Core) promotionRequest(p state.PendingApproval, gate string) (contracts.ApprovalRequest, error) {
	var args promotionArgs
	if err := json.Unmarshal([]byte(p.Call.Args), &args); err != nil || args.Stem == "" {
		return contracts.ApprovalRequest{}, fmt.Errorf("promotion %s: damaged arguments", p.Turn)
	}
	stem := args.Stem
	staging := c.layout.ToolsStaging()
	code, err := os.ReadFile(filepath.Join(staging, stem+".py"))
	if err != nil {
		return contracts.ApprovalRequest{}, err
	}
	test, err := os.ReadFile(filepath.Join(staging, "test_"+stem+".py"))
	if err != nil {
		return contracts.ApprovalRequest{}, err
	}
	note := args.Description
	if len(args.Unverifiable) > 0 {
		note += " — note, imports I could not verify: " + strings.Join(args.Unverifiable, "; ")
	}
	return contracts.ApprovalRequest{
		Turn: p.Turn, Tool: "new tool " + stem, Note: note, Expires: p.Expires,
		Detail: fmt.Sprintf("%s.py:\n%s\ntest_%s.py:\n%s\ngate: %s", stem, code, stem, test, gate),
	}, nil
}

// promote carries out the owner's decision on a tool: Approve moves it
// into tools/ with its manifest, live from the next turn; Deny deletes it.
// It needs no worker.
func (c *Core) promote(p state.PendingApproval, approve bool, by Origin) string {
	var args promotionArgs
	if err := json.Unmarshal([]byte(p.Call.Args), &args); err != nil || args.Stem == "" {
		return "That request was damaged, so I did nothing."
	}
	staged := selfcode.Staged{Stem: args.Stem, Dir: c.layout.ToolsStaging(),
		Module: filepath.Join(c.layout.ToolsStaging(), args.Stem+".py"), Test: filepath.Join(c.layout.ToolsStaging(), "test_"+args.Stem+".py")}
	if !approve {
		staged.Discard()
		c.log.Info("the owner turned a tool down", contracts.AuditEvent, contracts.EventPromotion, "tool", args.Stem, "decision", "denied")
		return fmt.Sprintf("All right, I threw %s away.", args.Stem)
	}
	code, err := os.ReadFile(staged.Module)
	if err != nil {
		return fmt.Sprintf("I could not find %s any more: %v", args.Stem, err)
	}
	sum := sha256.Sum256(code)
	m := tools.Manifest{Name: args.Stem, Description: args.Description, Schema: args.Schema, SHA256: hex.EncodeToString(sum[:]),
		PromotedAt: c.clock.Now().UTC().Format("2006-01-02T15:04:05Z"), PromotedBy: by.Transport + ":" + by.Chat}
	manifest, _ := json.MarshalIndent(m, "", "  ")
	dir := c.layout.Tools()
	for from, to := range map[string]string{staged.Module: filepath.Join(dir, args.Stem+".py"), staged.Test: filepath.Join(dir, "test_"+args.Stem+".py")} {
		if err := os.Rename(from, to); err != nil {
			return fmt.Sprintf("Keeping %s failed: %v", args.Stem, err)
		}
	}
	// The manifest last: a tool is live only once its manifest is there.
	if err := atomicfile.WriteFile(filepath.Join(dir, args.Stem+".json"), append(manifest, '\n'), 0o640); err != nil {
		return fmt.Sprintf("Keeping %s failed: %v", args.Stem, err)
	}
	if err := c.store.ClearStrikes(context.Background(), args.Stem); err != nil {
		c.log.Error("clearing the strikes of a new version", "tool", args.Stem, "err", err)
	}
	c.log.Info("promoted a tool", contracts.AuditEvent, contracts.EventPromotion, "tool", args.Stem, "decision", "promoted", "sha256", m.SHA256)
	return fmt.Sprintf("Kept: %s is one of my tools from now on.", args.Stem)
}

// lastLines is the end of a text, for a short report.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
