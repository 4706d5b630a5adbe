package policy

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrGitRefused marks a git command that the policy will not run.
var ErrGitRefused = errors.New("git command refused")

// ErrNotPlainArgs marks a string that [SplitArgs] will not split: its
// quoting is unbalanced, or it uses syntax that only a shell acts on
// (command separators, pipes, redirects, expansions), which would not do
// what it says since no shell runs it.
var ErrNotPlainArgs = errors.New("not a plain argument list")

// GitVerdict is what [CheckGit] concludes about a git command it allows.
type GitVerdict struct {
	// Subcommand is the git verb, such as "status" or "push".
	Subcommand string
	// Network reports that the command talks to a remote.
	Network bool
	// Note is one line for the owner: what the command does and what it
	// may destroy or reach.
	Note string
}

// gitSubcommands are the verbs git may run, each with the note the owner
// reads: reading and local history, plus the remote verbs the owner
// approves one by one. clone, submodule, config, archive and the rest are
// refused.
var gitSubcommands = lazy[map[string]string]{build: func() map[string]string {
	return map[string]string{
		"status":     "shows the state of the working tree",
		"log":        "reads history",
		"diff":       "shows changes",
		"show":       "shows a commit or file as stored",
		"rev-parse":  "reads object names",
		"rev-list":   "lists commits and objects",
		"merge-base": "finds the commits two histories share",
		"grep":       "searches the tracked files or history",
		"ls-files":   "lists the files git tracks",
		"ls-tree":    "lists the entries of a stored tree",
		"cat-file":   "shows a stored object",
		"blame":      "shows who last changed each line",
		"describe":   "names a commit after the nearest tag",
		"shortlog":   "summarizes history by author",
		"add":        "stages changes",
		"commit":     "records a commit",
		"branch":     "lists or changes branches",
		"checkout":   "switches branches or overwrites files with stored versions",
		"switch":     "switches branches",
		"restore":    "overwrites files with stored versions, discarding their changes",
		"stash":      "shelves uncommitted changes",
		"init":       "creates a repository",
		"fetch":      "downloads from a remote",
		"pull":       "downloads from a remote and merges",
		"push":       "uploads to a remote",
		"remote":     "lists or changes remotes",
		"tag":        "lists or changes tags",
		"reset":      "moves the branch head",
		"mv":         "moves files",
		"rm":         "deletes files",
	}
}}

// gitHookVerbs run the repository's hooks, scripts in the workspace that
// the owner should know will run.
var gitHookVerbs = []string{"commit", "push", "pull", "checkout", "switch"}

// gitHarmlessGlobals are the only options allowed before the subcommand:
// none takes a value, reads configuration from elsewhere, runs a program
// or shows objects past the sandbox's masks.
var gitHarmlessGlobals = []string{
	"--no-pager", "-P", "--no-optional-locks", "--no-advice",
	"--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
}

// gitGlobalReasons explain the refusal of well-known global options.
var gitGlobalReasons = lazy[map[string]string]{build: func() map[string]string {
	return map[string]string{
		"-c":                   "sets configuration for this run, and settings such as core.sshCommand or core.pager run programs",
		"-C":                   "changes the directory git works in, which may leave the workspace",
		"-p":                   "runs a pager, a program chosen by configuration",
		"--paginate":           "runs a pager, a program chosen by configuration",
		"--bare":               "treats the working directory as the repository itself",
		"--no-replace-objects": "shows git's objects as stored, past the sandbox's masks over what credential-shaped files held in history",
	}
}}

// gitForbiddenOption is a long option refused anywhere in the arguments,
// with why.
type gitForbiddenOption struct {
	name   string // without the leading "--"
	reason string
}

// gitForbiddenOptions are refused anywhere, in the "--name value" and the
// "--name=value" forms, and abbreviated: git's option parser takes any
// unambiguous prefix of a long option ("--upload-p" is --upload-pack).
// Some are harmless in a few commands (rev-parse --git-dir prints a path,
// commit --template reads a message template); they are refused there too,
// since one rule everywhere is one rule to get right.
var gitForbiddenOptions = []gitForbiddenOption{
	{"upload-pack", "names the program run at the other end of a fetch, which for a local path runs here"},
	{"receive-pack", "names the program run at the other end of a push, which for a local path runs here"},
	{"exec", "names the program run at the other end of a push, which for a local path runs here"},
	{"exec-path", "changes where git finds its own programs"},
	{"git-dir", "points git at another repository"},
	{"work-tree", "points git at another working tree"},
	{"namespace", "makes git read and write another set of refs"},
	{"config-env", "sets configuration, and settings such as core.sshCommand run programs"},
	{"template", "copies hooks, which git runs, from another directory"},
	{"separate-git-dir", "moves the repository outside the working tree"},
	{"ext-diff", "runs the external diff program named by configuration"},
}

// gitMinAbbreviation is the shortest prefix of a forbidden option that is
// refused; git itself needs a prefix to be unambiguous, and shorter ones
// would catch too many ordinary options.
const gitMinAbbreviation = 3

// gitTransport matches git's "<transport>::<address>" syntax, which runs
// the remote helper git-remote-<transport>; ext:: runs any command.
var gitTransport = lazy[*regexp.Regexp]{build: func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`) }}

// ParseGit splits command with [SplitArgs] and checks it with [CheckGit],
// returning the argument vector to run. The leading "git" may be left out:
// "status --short" and "git status --short" run the same.
func ParseGit(command string) (argv []string, verdict GitVerdict, err error) {
	args, err := SplitArgs(command)
	if err != nil {
		return nil, GitVerdict{}, fmt.Errorf("%w: %w", ErrGitRefused, err)
	}
	if len(args) == 0 || args[0] != "git" {
		args = append([]string{"git"}, args...)
	}
	verdict, err = CheckGit(args)
	if err != nil {
		return nil, GitVerdict{}, err
	}
	return args, verdict, nil
}

// CheckGit decides whether argv, a git command with argv[0] exactly "git",
// may run. The subcommand (the first argument that is not an option) must
// be on the allowlist, and only a few harmless options may come before it,
// which rules out -c (configuration) and -C (another directory). Anywhere
// in the arguments it refuses the options that name programs or other
// repositories (--upload-pack, --receive-pack, --exec, --git-dir,
// --work-tree, --namespace, --exec-path, --config-env and a few more, also
// abbreviated), the transport syntax "name::address" (ext:: runs
// commands), and characters that would make the approval prompt read
// differently from what runs: control and invisible characters, and
// dashes that only look like "-". The refusal wraps [ErrGitRefused].
func CheckGit(argv []string) (GitVerdict, error) {
	if len(argv) == 0 {
		return GitVerdict{}, fmt.Errorf("%w: the command is empty", ErrGitRefused)
	}
	if argv[0] != "git" {
		return GitVerdict{}, fmt.Errorf("%w: it runs %q, not git", ErrGitRefused, argv[0])
	}
	args := argv[1:]
	for _, arg := range args {
		if reason := gitArgumentReason(arg); reason != "" {
			return GitVerdict{}, fmt.Errorf("%w: argument %q %s", ErrGitRefused, arg, reason)
		}
	}
	at := 0
	for ; at < len(args) && strings.HasPrefix(args[at], "-"); at++ {
		if reason := gitGlobalReason(args[at]); reason != "" {
			return GitVerdict{}, fmt.Errorf("%w: %q before the subcommand %s", ErrGitRefused, args[at], reason)
		}
	}
	if at == len(args) {
		return GitVerdict{}, fmt.Errorf("%w: no subcommand", ErrGitRefused)
	}
	sub, rest := args[at], args[at+1:]
	if sub == "config" {
		return GitVerdict{}, fmt.Errorf("%w: git config is never run: a setting such as core.sshCommand or core.hooksPath would make a later command run a program", ErrGitRefused)
	}
	if _, ok := gitSubcommands.get()[sub]; !ok {
		return GitVerdict{}, fmt.Errorf("%w: %q is not one of the allowed subcommands (%s)", ErrGitRefused, sub, strings.Join(gitAllowedList(), " "))
	}
	network := gitNetwork(sub, rest)
	return GitVerdict{Subcommand: sub, Network: network, Note: gitNote(sub, rest, network)}, nil
}

// gitAllowedList returns the allowed subcommands in order, for messages.
func gitAllowedList() []string {
	names := make([]string, 0, len(gitSubcommands.get()))
	for name := range gitSubcommands.get() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// gitArgumentReason says why an argument is refused wherever it stands,
// or "".
func gitArgumentReason(arg string) string {
	if !utf8.ValidString(arg) {
		return "is not valid UTF-8"
	}
	for _, r := range arg {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("contains the invisible character %U, which would hide what runs", r)
		}
	}
	if first, _ := utf8.DecodeRuneInString(arg); first != '-' && (unicode.Is(unicode.Pd, first) || first == '\u2212') {
		return fmt.Sprintf("starts with %q, which looks like \"-\" but is not one", first)
	}
	if option, ok := strings.CutPrefix(arg, "--"); ok {
		name, _, _ := strings.Cut(option, "=")
		if forbidden, ok := gitForbiddenMatch(name); ok {
			if name == forbidden.name {
				return forbidden.reason
			}
			return fmt.Sprintf("abbreviates --%s, which %s", forbidden.name, forbidden.reason)
		}
	}
	_, value, _ := strings.Cut(arg, "=")
	if gitTransport.get().MatchString(arg) || gitTransport.get().MatchString(value) {
		return "uses the \"transport::address\" form, which runs a remote helper program (ext:: runs any command)"
	}
	return ""
}

// gitForbiddenMatch finds the forbidden option that name spells out or
// abbreviates.
func gitForbiddenMatch(name string) (gitForbiddenOption, bool) {
	if len(name) < gitMinAbbreviation {
		return gitForbiddenOption{}, false
	}
	var abbreviated []gitForbiddenOption
	for _, option := range gitForbiddenOptions {
		if option.name == name {
			return option, true
		}
		if strings.HasPrefix(option.name, name) {
			abbreviated = append(abbreviated, option)
		}
	}
	if len(abbreviated) == 0 {
		return gitForbiddenOption{}, false
	}
	return abbreviated[0], true
}

// gitGlobalReason says why an option before the subcommand is refused,
// or "".
func gitGlobalReason(option string) string {
	if slices.Contains(gitHarmlessGlobals, option) {
		return ""
	}
	for _, flag := range []string{"-c", "-C"} {
		// git reads "-c" only apart from its value, but a stuck "-cname=value" is refused all the same.
		if strings.HasPrefix(option, flag) {
			return gitGlobalReasons.get()[flag]
		}
	}
	if reason, ok := gitGlobalReasons.get()[option]; ok {
		return reason
	}
	return fmt.Sprintf("is not one of the options allowed there (%s)", strings.Join(gitHarmlessGlobals, " "))
}

// gitNetwork reports whether the subcommand with these arguments talks to
// a remote. For remote, the verbs that ask the remote are counted: update,
// prune, show (unless -n), set-head --auto, and add --fetch.
func gitNetwork(sub string, rest []string) bool {
	switch sub {
	case "fetch", "pull", "push":
		return true
	case "remote":
		switch verb := gitFirstOperand(rest); verb {
		case "update", "prune":
			return true
		case "show":
			return !slices.Contains(rest, "-n")
		case "set-head":
			return gitHasOption(rest, "-a", "--auto")
		case "add":
			return gitHasOption(rest, "-f", "--fetch")
		}
	}
	return false
}

// gitNote composes the owner's one line about the command.
func gitNote(sub string, rest []string, network bool) string {
	parts := []string{gitSubcommands.get()[sub]}
	if network {
		parts = append(parts, "over the network")
	}
	if slices.Contains(gitHookVerbs, sub) {
		parts = append(parts, "the repository's hooks run")
	}
	switch sub {
	case "reset":
		if gitHasOption(rest, "", "--hard") {
			parts = append(parts, "discards uncommitted changes (--hard)")
		}
	case "checkout", "switch":
		if gitHasOption(rest, "-f", "--force", "--discard-changes") {
			parts = append(parts, "discards uncommitted changes (force)")
		}
	case "commit":
		if gitHasOption(rest, "", "--amend") {
			parts = append(parts, "rewrites the last commit (--amend)")
		}
	case "push":
		if gitHasOption(rest, "-f", "--force", "--force-with-lease", "--force-if-includes") ||
			slices.ContainsFunc(rest, func(arg string) bool { return strings.HasPrefix(arg, "+") }) {
			parts = append(parts, "may overwrite the remote's history (force)")
		}
		if gitHasOption(rest, "-d", "--delete") {
			parts = append(parts, "deletes remote refs")
		}
		if gitHasOption(rest, "", "--mirror") {
			parts = append(parts, "makes the remote mirror every ref (--mirror)")
		}
	case "branch":
		if gitHasOption(rest, "-d", "--delete") || gitHasOption(rest, "-D") {
			parts = append(parts, "deletes a branch")
		}
	case "tag":
		if gitHasOption(rest, "-d", "--delete") {
			parts = append(parts, "deletes a tag")
		}
	case "stash":
		if verb := gitFirstOperand(rest); verb == "drop" || verb == "clear" {
			parts = append(parts, "throws away stashed changes ("+verb+")")
		}
	case "remote":
		if verb := gitFirstOperand(rest); verb == "remove" || verb == "rm" {
			parts = append(parts, "forgets a remote and its branches")
		}
	case "cat-file":
		if gitPrintsEveryObject(rest) {
			parts = append(parts, gitEveryObjectNote)
		}
	}
	return strings.Join(parts, "; ")
}

// gitEveryObjectNote says what cat-file --batch-all-objects --batch does.
const gitEveryObjectNote = "prints every object git stores as stored, what credential-shaped files held included: --batch-all-objects turns the sandbox's masks off"

// gitFirstOperand returns the first argument that is not an option, the
// verb of a subcommand that has verbs (remote add, stash drop).
func gitFirstOperand(args []string) string {
	for _, arg := range args {
		if !strings.HasPrefix(arg, "-") {
			return arg
		}
	}
	return ""
}

// gitHasOption reports whether args hold the short option (exactly, as a
// word of its own; "" for none) or one of the long ones (alone or with
// "=value").
func gitHasOption(args []string, short string, long ...string) bool {
	for _, arg := range args {
		if short != "" && arg == short {
			return true
		}
		name, _, _ := strings.Cut(arg, "=")
		if slices.Contains(long, name) {
			return true
		}
	}
	return false
}

// gitSplitRefusals say what a shell would do with the characters that
// SplitArgs refuses outside quotes.
var gitSplitRefusals = lazy[map[byte]string]{build: func() map[byte]string {
	return map[byte]string{
		';':  "ends a command",
		'|':  "starts a pipe or an alternative",
		'&':  "runs in the background or chains commands",
		'<':  "redirects input",
		'>':  "redirects output",
		'(':  "starts a subshell",
		')':  "ends a subshell",
		'$':  "expands a variable or runs a command",
		'`':  "runs a command",
		'\n': "starts a new command",
		'\r': "is a line break, which starts a new command",
	}
}}

// gitSplitWordStartRefusals are refused by SplitArgs at the start of a
// word only, where a shell reads them.
var gitSplitWordStartRefusals = lazy[map[byte]string]{build: func() map[byte]string {
	return map[byte]string{
		'#': "starts a comment",
		'~': "names a home directory",
	}
}}

// SplitArgs splits s into arguments the way a POSIX shell splits words,
// with no shell: blanks separate words, single quotes keep everything
// literally, double quotes keep everything but a backslash before one of
// \ " $ `, and a backslash outside quotes keeps the next character
// (before a line break, it joins the lines). Whatever a shell would act
// on instead of passing it on is refused, wrapping [ErrNotPlainArgs]:
// ; | & < > ( ) $ ` and line breaks outside quotes, # and ~ at the start
// of a word, and $ or ` inside double quotes (single quotes keep them).
// Glob characters pass through unexpanded, as git reads pathspecs itself.
func SplitArgs(s string) ([]string, error) {
	var (
		args   []string
		word   strings.Builder
		inWord bool // a word has started, even an empty quoted one
	)
	refuse := func(at int, why string) error {
		return fmt.Errorf("%w: %s at byte %d of %q", ErrNotPlainArgs, why, at, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				args = append(args, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, refuse(i, "a single quote is never closed")
			}
			word.WriteString(s[i+1 : i+1+end])
			i += 1 + end
			inWord = true
		case c == '"':
			end, err := gitSplitDoubleQuoted(s, i+1, &word)
			if err != nil {
				return nil, refuse(end, err.Error())
			}
			i = end
			inWord = true
		case c == '\\':
			if i+1 == len(s) {
				return nil, refuse(i, "a backslash ends the string")
			}
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case gitSplitRefusals.get()[c] != "":
			return nil, refuse(i, fmt.Sprintf("%q outside quotes %s in a shell", c, gitSplitRefusals.get()[c]))
		case gitSplitWordStartRefusals.get()[c] != "" && !inWord:
			return nil, refuse(i, fmt.Sprintf("%q at the start of a word %s in a shell", c, gitSplitWordStartRefusals.get()[c]))
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, word.String())
	}
	return args, nil
}

// gitSplitDoubleQuoted copies the inside of a double-quoted string that
// starts at s[from] into word, and returns the index of the closing quote,
// or where it failed.
func gitSplitDoubleQuoted(s string, from int, word *strings.Builder) (int, error) {
	for i := from; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i, nil
		case '$', '`':
			return i, fmt.Errorf("%q inside double quotes would be expanded by a shell; use single quotes to keep it", c)
		case '\\':
			if i+1 == len(s) {
				return i, errors.New("a double quote is never closed")
			}
			switch next := s[i+1]; next {
			case '\\', '"', '$', '`':
				word.WriteByte(next)
				i++
			case '\n':
				i++
			default:
				word.WriteByte(c)
			}
		default:
			word.WriteByte(c)
		}
	}
	return len(s), errors.New("a double quote is never closed")
}
