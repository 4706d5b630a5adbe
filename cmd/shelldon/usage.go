package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// The exit statuses of every command (docs/commands.md, "Exit status"). `sandbox
// run` exits with its command's own status instead.
const (
	exitOK = 0
	// exitNo is a failure, or a result that is a "no": a policy check
	// that asks, a doctor that finds a FAIL, no current image.
	exitNo = 1
	// exitUsage is a command line shelldon cannot take, as the flag
	// package's own programs exit.
	exitUsage = 2
)

// exitCode is the status the process exits with when a command returned
// err.
func exitCode(err error) int {
	var status reported
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &usage):
		return exitUsage
	}
	return exitNo
}

// reported is a result the command has printed already, so main adds
// nothing to it; it is the status to exit with.
type reported int

func (r reported) Error() string { return fmt.Sprintf("exit status %d", int(r)) }

// errQuiet is a "no", or a failure, that the command has already printed.
const errQuiet = reported(exitNo)

// usageError is a command line shelldon cannot take. It names the help
// that says how to write it.
type usageError struct {
	topic string // the command whose help to read; "" for the list of commands
	err   error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v (see `%s`)", e.err, strings.TrimSpace("shelldon help "+e.topic))
}

func (e *usageError) Unwrap() error { return e.err }

// usagef is a usage error of topic's command line.
func usagef(topic, format string, args ...any) error {
	return &usageError{topic: topic, err: fmt.Errorf(format, args...)}
}

// helpRequested is a command line that asks for a command's help: run
// prints it and exits 0. flags is the command's flag set, nil for a
// command that has only verbs.
type helpRequested struct {
	topic string
	flags *flag.FlagSet
}

func (h *helpRequested) Error() string { return "help requested for " + h.topic }

// isHelpFlag reports whether arg asks for help, as the flag package
// understands it.
func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help"
}

// parseFlags parses a command's flags and returns the arguments after
// them. Help and bad flags come back as a helpRequested or a usageError
// of the command named by the flag set.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, &helpRequested{topic: fs.Name(), flags: fs}
		}
		return nil, usagef(fs.Name(), "%s: %w", fs.Name(), err)
	}
	return fs.Args(), nil
}

// parse parses a command that takes flags and nothing else.
func parse(fs *flag.FlagSet, args []string) error {
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	return noArguments(fs.Name())(rest)
}

// noArguments refuses any argument after command's flags.
func noArguments(command string) func(rest []string) error {
	return func(rest []string) error {
		if len(rest) > 0 {
			return usagef(command, "%s: unexpected argument %q", command, rest[0])
		}
		return nil
	}
}

// verb splits the verb of a command that has verbs (`image build`) from
// its arguments. A command with one verb answers help with the verb's.
func verb(command string, args []string, verbs ...string) (string, []string, error) {
	switch {
	case len(args) > 0 && slices.Contains(verbs, args[0]):
		return args[0], args[1:], nil
	case len(args) > 0 && isHelpFlag(args[0]) && len(verbs) == 1:
		return verbs[0], args, nil
	case len(args) > 0 && isHelpFlag(args[0]):
		return "", nil, &helpRequested{topic: command}
	case len(args) == 0:
		return "", nil, usagef(command, "%s: say which: %s", command, strings.Join(verbs, " or "))
	}
	return "", nil, usagef(command, "%s: unknown command %q: want %s", command, args[0], strings.Join(verbs, " or "))
}

// commandDoc is what `shelldon help` says of a command; its flags come
// from the command's own flag set, so they are always the ones it takes.
// A command with a single verb (policy check, sandbox run) has only its
// summary: its help is the verb's.
type commandDoc struct {
	name string
	// summary is its line in the list of commands; "" for a verb, which
	// its command's line covers, and for a command only shelldon runs.
	summary  string
	synopsis string
	about    string
	example  string
}

// docs are every command's, in the order `shelldon help` lists them.
var docs = []commandDoc{
	{name: "up", summary: "core, broker, panel in one process for development; the demo model when no provider is configured; --chat talks to it here",
		synopsis: "shelldon up [--chat] [--config FILE] [--state-dir DIR]",
		about: `Runs core, the broker and the panel in one process, for development: workers
are child processes and the face is drawn to <state-dir>/panel.png. With no
provider configured it starts the scripted demo model (shelldon-demo-model,
beside this binary or on $PATH) and says so in a banner; with no [[mcp]]
table either, it configures the example MCP server demo-mcp/shelldon-demo-mcp
beside this binary, which runs in the sandbox. With --chat the
terminal is a chat with the pet and the logs go to <state-dir>/shelldon.log.
` + "`make run`" + ` runs shelldon up --chat --state-dir var.`,
		example: "shelldon up --chat --state-dir var"},
	{name: "daemon", summary: "core: the bus, the turns, the state, the Telegram bot",
		synopsis: "shelldon daemon [--config FILE] [--state-dir DIR]",
		about: `Runs core until it is stopped: the bus, the turns, the state and the Telegram
bot. shelldon.service runs it; it thinks through a broker (shelldon broker).`,
		example: "sudo shelldon daemon --config /etc/shelldon/shelldon.toml"},
	{name: "broker", summary: "the model broker: the only process with provider credentials",
		synopsis: "shelldon broker [--config FILE] [--state-dir DIR]",
		about: `Joins core's bus and answers the workers' model calls through the configured
[[provider]] chain, each provider tried in order with one retry.
shelldon-broker.service runs it.`,
		example: "shelldon broker --config /etc/shelldon/shelldon.toml"},
	{name: "chat", summary: "talk to a running core from this terminal",
		synopsis: "shelldon chat [--config FILE] [--state-dir DIR]",
		about: `Talks to the running core from this terminal: each line is a message, /help
lists the commands. It ends with the input (Ctrl-D).`,
		example: "shelldon chat --state-dir var"},
	{name: "turns", summary: "recent turns: outcome, timings, tokens, the worker's memory",
		synopsis: "shelldon turns [-n COUNT] [--json] [--config FILE] [--state-dir DIR]",
		about: `Lists the most recent turns, newest first: kind, start, duration, spawn time,
model time, tokens, the worker's memory peak, CPU and how it ended, outcome.
--json prints one object per turn and line; docs/commands.md lists its fields.`,
		example: "shelldon turns -n 5 --state-dir var"},
	{name: "doctor", summary: "what this host lacks, one line each, with the fix",
		synopsis: "shelldon doctor [--config FILE] [--state-dir DIR]",
		about: `Checks what the pet needs of this host, one line each (ok, warn, FAIL) with
the fix. Exits 1 when a line says FAIL.`,
		example: "sudo shelldon doctor"},
	{name: "policy", summary: "policy check 'COMMAND': would it run without asking, and why not"},
	{name: "policy check",
		synopsis: "shelldon policy check [--json] [--workspace DIR] [--config FILE]\n                             [--state-dir DIR] 'COMMAND'",
		about: `Says whether the shell command would run without asking the owner, judged
over the workspace (<state-dir>/workspace unless --workspace names another):
"safe: runs without asking" and exit 0, or "asks:" with the note the owner
would read and the reasons, and exit 1.`,
		example: "shelldon policy check 'cd /tmp && rm -f todos.json'"},
	{name: "image", summary: "image build | status: the sandbox image commands run in",
		synopsis: "shelldon image build [flags]\n       shelldon image status [flags]",
		about: `The sandbox image: the Debian root every sandboxed command runs in, kept in
the image cache. See shelldon help image build and shelldon help image status.`,
		example: "shelldon image status"},
	{name: "image build",
		synopsis: "shelldon image build [--cache DIR] [--mirror URL] [--recipe FILE]\n                            [--config FILE] [--state-dir DIR]",
		about: `Builds the sandbox image with mmdebstrap into the image cache and verifies
it; an image of the same recipe already there is kept. Needs root. ` + "`make image`" + `
runs it. It uses nothing of the configuration, but stops on one that does not
load, as every command does.`,
		example: "sudo shelldon image build"},
	{name: "image status",
		synopsis: "shelldon image status [--cache DIR] [--recipe FILE] [--config FILE]\n                             [--state-dir DIR]",
		about: `Says what the image cache holds: the current image of the recipe, and stale
and unfinished ones the next build removes. Exits 1 when there is no current
image. It uses nothing of the configuration, but stops on one that does not
load, as every command does.`,
		example: "shelldon image status"},
	{name: "sandbox", summary: "sandbox run [--view V] -- COMMAND: run one command as a tool would"},
	{name: "sandbox run",
		synopsis: "shelldon sandbox run [--view read-only|captured|scratch] [--dir DIR]\n                            [--network] [--apply] [--config FILE]\n                            [--state-dir DIR] -- COMMAND [ARG...]",
		about: `Runs one command in the sandbox over the pet's workspace, as a tool would. Its
output goes to stdout; how it ended, the limits that held and a captured
run's changes to stderr. A captured run's changes are applied only with
--apply. shelldon exits with the command's own status (124 when it ran out
of time, 137 when it was killed). Needs root and the sandbox image.`,
		example: "sudo shelldon sandbox run --view captured -- sh -c 'echo hi > hello.txt'"},
	{name: "panel", summary: "draw the pet's face: e-ink display, PNG file or terminal (--preview)",
		synopsis: "shelldon panel [--preview] [--config FILE] [--state-dir DIR]",
		about: `Draws the pet's face as core sends it, until stopped: on the Waveshare
display, the PNG file panel.png_path, or with --preview in this terminal.
shelldon-panel.service runs it.`,
		example: "shelldon panel --preview --state-dir var"},
	{name: "tools", summary: "the self-coded tools and their strikes; tools restore NAME",
		synopsis: "shelldon tools [--config FILE] [--state-dir DIR]\n       shelldon tools restore NAME [--config FILE] [--state-dir DIR]",
		about: `Lists the tools the pet wrote itself, with their state (live, staged,
quarantined) and strikes. tools restore NAME asks core to bring a
quarantined one back: see shelldon help tools restore.`,
		example: "shelldon tools --state-dir var"},
	{name: "tools restore",
		synopsis: "shelldon tools restore NAME [--config FILE] [--state-dir DIR]",
		about: `Asks the running core to bring the quarantined tool NAME back, with its
strikes cleared, if its files are still what was kept, and prints core's
answer. Exits 1 when core did not restore it.`,
		example: "shelldon tools restore reverse_text --state-dir var"},
	{name: "setup", summary: "the bot token and the model provider, checked, written, then doctor",
		synopsis: "shelldon setup [--telegram-token-file FILE | --no-telegram]\n" +
			"       [--telegram-api URL] [--provider NAME [--base-url URL]\n" +
			"       [--model MODEL] [--api-key-file FILE]] [--config FILE] [--state-dir DIR]",
		about: `Asks for what a flag does not give: the bot token, checked with the Bot
API's getMe (it names the bot); a provider (a preset, or custom with its
base URL) and its key, checked with one small completion that offers a
tool (a refused key, an unknown model, a model that calls no tools and a
server out of reach are said as such). Nothing is written until both
pass. Then the key goes alone in /etc/shelldon/credentials/NAME-api-key, the
token in /etc/shelldon/telegram/token (mode 0600), the [[provider]]
table into the configuration (the rest of it kept; the change shown),
and doctor runs. Needs root; with --state-dir DIR it writes
DIR/credentials/ and DIR/shelldon.toml instead, which commands given
--state-dir DIR read. Secrets are read up to 4 KiB.`,
		example: "sudo shelldon setup --provider groq --api-key-file key"},
	{name: "pair", summary: "a one-time code that makes whoever sends it to the bot its owner",
		synopsis: "shelldon pair [--config FILE] [--state-dir DIR]",
		about: `Mints a one-time code (ABCD-EFGH) and prints it. The first Telegram user
who sends it to the bot within 10 minutes becomes the pet's owner,
replacing one paired before; 5 wrong guesses spend it. Until the pet has
an owner, strangers read only "not paired". Needs to write the state
directory: run it as root on the board. No running core is needed.`,
		example: "sudo shelldon pair"},
	{name: "version", summary: "which build this is",
		synopsis: "shelldon version [--config FILE] [--state-dir DIR]",
		about: `Prints which build this is. Like every command it stops on a configuration
file that is missing or does not load.`,
		example: "shelldon version"},
}

// docFor is the doc of the command called name.
func docFor(name string) (commandDoc, bool) {
	i := slices.IndexFunc(docs, func(d commandDoc) bool { return d.name == name })
	if i < 0 {
		return commandDoc{}, false
	}
	return docs[i], true
}

// helpWidth is the width help fits in: a terminal of 80 columns.
const helpWidth = 80

// writeUsage prints the list of commands: `shelldon help`.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, `shelldon — a personal AI pet for small Linux boards

usage: shelldon <command> [flags]
       shelldon help <command>    what it does, its flags and an example

commands:
`)
	var listed [][2]string
	for _, d := range docs {
		if d.summary != "" {
			listed = append(listed, [2]string{d.name, d.summary})
		}
	}
	writeColumns(w, listed)
	fmt.Fprint(w, `
Every command takes --config FILE (default $SHELLDON_CONFIG, else
/etc/shelldon/shelldon.toml if it exists) and --state-dir DIR (overrides
state_dir). Exit status: 0 done, 1 a failure or a "no", 2 a command line
shelldon cannot take. Core starts each turn's worker, shelldon-worker.
`)
}

// writeHelp prints one command's help: what `shelldon help CMD` and
// `shelldon CMD --help` print.
func writeHelp(w io.Writer, d commandDoc, flags *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", d.synopsis, d.about)
	if flags != nil {
		var listed [][2]string
		flags.VisitAll(func(f *flag.Flag) {
			value, usage := flag.UnquoteUsage(f)
			spelled := "--" + f.Name
			if len(f.Name) == 1 {
				spelled = "-" + f.Name
			}
			if value != "" {
				spelled += " " + value
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			listed = append(listed, [2]string{spelled, usage})
		})
		fmt.Fprint(w, "\nflags:\n")
		writeColumns(w, listed)
	}
	fmt.Fprintf(w, "\nexample:\n  %s\n", d.example)
}

// writeColumns prints name and text pairs in two columns, indented, the
// text wrapped to fit helpWidth.
func writeColumns(w io.Writer, rows [][2]string) {
	nameWidth := 0
	for _, r := range rows {
		nameWidth = max(nameWidth, utf8.RuneCountInString(r[0]))
	}
	indent := 2 + nameWidth + 2
	for _, r := range rows {
		lines := wrap(r[1], helpWidth-indent)
		fmt.Fprintf(w, "  %-*s  %s\n", nameWidth, r[0], lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%*s%s\n", indent, "", l)
		}
	}
}

// wrap breaks text into lines of at most width characters, at spaces; a
// word longer than width has a line of its own.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	return append(lines, line)
}

// help answers `shelldon help [COMMAND [VERB]]`: the command's help comes
// from the command itself, asked with --help, so that its flags are the
// ones it parses.
func help(words []string, asCommand func(args []string) error, stdout io.Writer) error {
	if len(words) == 0 || len(words) == 1 && (words[0] == "help" || isHelpFlag(words[0])) {
		writeUsage(stdout) // help's own help is the list of commands
		return nil
	}
	if _, ok := docFor(strings.Join(words, " ")); !ok {
		return usagef("", "help: no command %q", strings.Join(words, " "))
	}
	return asCommand(append(slices.Clip(words), "--help"))
}
