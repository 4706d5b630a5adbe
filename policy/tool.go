package policy

import (
	"fmt"

	"shelldon/contracts"
)

// ToolArgs is one call of a tool as policy judges it: its arguments as
// the tool parsed them, and what the caller looked up for it. Policy
// looks at nothing itself: whether a file exists, where the workspace
// is, are facts its caller hands in.
type ToolArgs struct {
	// Values are the call's arguments by name, parsed and bounded.
	Values map[string]string
	// Workspace is the workspace's absolute path, which run_shell's
	// commands are judged against (see [Classify]).
	Workspace string
	// Exists says that the file a write_file call names exists already
	// (the caller resolved it in the jail and looked).
	Exists bool
	// SelfCoded marks a call of a tool the pet wrote itself, which
	// carries no name of its own in policy.
	SelfCoded bool
}

// ToolVerdict is policy's verdict on one call: whether it runs at once or
// asks the owner, and what the owner is told.
type ToolVerdict struct {
	// Tier says whether the call runs without asking.
	Tier contracts.Tier
	// Note is one line for the owner on what an asking call does; empty
	// for FREE calls.
	Note string
	// Network means the call reaches the network.
	Network bool
	// Sandboxed means the call is FREE but runs a program, which its
	// caller runs read-only in the sandbox: a read-only run_shell command,
	// a self-coded tool.
	Sandboxed bool
	// Argv is what a call that runs a program runs, as policy parsed it
	// (git's arguments, run_shell's command line under sh -c); nil for
	// the others.
	Argv []string
	// URL is an http_get's URL as checked, in its normal form.
	URL string
}

// ToolTier is the tier of the tool named name as its definition gives it
// to the model: what a call asks at most. run_shell is RISKY here, and its
// read-only commands are FREE call by call ([Tool]). A self-coded tool is
// FREE (it runs sandboxed, without network or writes); a name policy does
// not know is RISKY, so a tool added without a decision here asks. (A
// switch, not a map: the worker's start builds nothing of policy's.)
func ToolTier(name string, selfCoded bool) contracts.Tier {
	if selfCoded {
		return contracts.TierFree
	}
	switch name {
	case "get_time", "read_file", "list_dir", "python_eval":
		return contracts.TierFree
	}
	return contracts.TierRisky
}

// Tool decides one call of the tool named name: its tier, the owner's
// note and what it runs. A call that may never run is refused with the
// rule's error: [ErrForbiddenURL] or [ErrForbiddenAddress] for http_get,
// [ErrGitRefused] for git. Checking the arguments' form, and resolving
// paths in the jail, is the caller's, before it asks.
func Tool(name string, args ToolArgs) (ToolVerdict, error) {
	if args.SelfCoded {
		return ToolVerdict{Tier: contracts.TierFree, Sandboxed: true}, nil
	}
	v := args.Values
	switch name {
	case "run_shell":
		argv := []string{"/bin/sh", "-c", v["command"]}
		verdict := Classify(v["command"], args.Workspace)
		if verdict.Safe {
			return ToolVerdict{Tier: contracts.TierFree, Sandboxed: true, Argv: argv}, nil
		}
		return ToolVerdict{Tier: contracts.TierRisky, Note: verdict.Note, Network: verdict.Network, Argv: argv}, nil
	case "write_file":
		effect := "creates it"
		if args.Exists {
			effect = "replaces it"
		}
		return ToolVerdict{Tier: contracts.TierRisky, Note: fmt.Sprintf("writes %d bytes to %s (%s)", len(v["content"]), v["path"], effect)}, nil
	case "edit_file":
		return ToolVerdict{Tier: contracts.TierRisky, Note: "replaces one piece of " + v["path"]}, nil
	case "http_get":
		u, err := CheckURL(v["url"])
		if err != nil {
			return ToolVerdict{}, err
		}
		return ToolVerdict{Tier: contracts.TierRisky, Note: "fetches " + u.String(), Network: true, URL: u.String()}, nil
	case "git":
		argv, verdict, err := ParseGit(v["args"])
		if err != nil {
			return ToolVerdict{}, err
		}
		return ToolVerdict{Tier: contracts.TierRisky, Note: verdict.Note, Network: verdict.Network, Argv: argv}, nil
	}
	return ToolVerdict{Tier: ToolTier(name, false)}, nil
}
