package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// shellCommand is a command on the read/test list.
type shellCommand struct {
	name string
	// why it may run without asking.
	reason string
	// check refuses, through shellCall.refuse, the uses of the command that
	// do more than read or run the tests; nil when no use does. A command
	// with a check also refuses a glob that could expand to an option,
	// unless optionGlobsHarmless.
	check func(c *shellCall)
	// optionGlobsHarmless means a glob that expands to an option does no
	// harm, so it may pass: every option only changes what is read or how
	// it is printed, and the check relies on no word a glob could turn
	// into (grep looks for its pattern only among words that are no glob).
	optionGlobsHarmless bool
}

// shellSafeCommands are the commands that run without asking: the seed's
// eleven (ls cat head tail grep wc find pytest echo pwd true) and what a
// careful reviewer adds, read and print commands each with the uses that
// still ask. The sandbox image (Debian bookworm) lacks some of them (rg,
// tree, file, jq, xxd, hexdump, column, strings, look, cal); they are
// listed for images that have them, and not found where they are not.
// Left out on purpose: cd (CDPATH, "cd" alone and "cd -" leave the
// workspace, and it is what models use to leave it), xargs (it runs
// other commands), less and more (pagers wait for a terminal), tee, yes
// (it never ends on its own), yq (one yq writes files with -i and
// --split-exp), and sleep.
var shellSafeCommands = lazy[[]shellCommand]{build: func() []shellCommand {
	return []shellCommand{
		{name: "ls", reason: "lists directory entries; no option writes a file or runs a program"},
		{name: "cat", reason: "prints files"},
		{name: "head", reason: "prints the first lines of files; no option writes or waits"},
		{name: "tail", reason: "prints the last lines of files; following a file never ends, so -f, -F and --follow ask",
			check: shellTailCheck},
		{name: "grep", reason: "searches text; even -r only reads below the paths it is given, and no option writes or runs a program; its pattern is matched, never opened, so it may look like a path or a credential's name",
			check: shellGrepCheck, optionGlobsHarmless: true},
		{name: "egrep", reason: "is grep -E", check: shellGrepCheck, optionGlobsHarmless: true},
		{name: "fgrep", reason: "is grep -F", check: shellGrepCheck, optionGlobsHarmless: true},
		// A glob could expand to --files0-from only through a file so named,
		// and then wc would print names and counts, never text: wc and du
		// let such globs pass (wc -l *.py).
		{name: "wc", reason: "counts lines, words and bytes; --files0-from asks, since it takes the file names from a file this check cannot see",
			check: shellRefuseOptions(shellGetopt{}, shellFilesFrom), optionGlobsHarmless: true},
		{name: "find", reason: "lists files; the actions that delete, write or run (-delete, -exec, -execdir, -ok, -okdir, -fprint, -fprint0, -fprintf, -fls) ask, and so does -files0-from",
			check: shellFindCheck},
		{name: "pytest", reason: "runs the workspace's tests: code the model may have written, contained by the sandbox; only the options pytest lists that read, select and print pass (see shellPytestOptions.get()), and not those that import by name, load other configuration, write, delete or reach the network",
			check: shellPytestCheck},
		{name: "py.test", reason: "is pytest, by its old name", check: shellPytestCheck},
		{name: "pytest-3", reason: "is pytest, as Debian names it", check: shellPytestCheck},
		{name: "py.test-3", reason: "is pytest, as Debian names it", check: shellPytestCheck},
		{name: "python", reason: "only as python -m pytest, which is pytest, or python --version, which prints the version; anything else runs Python code",
			check: shellPythonCheck},
		{name: "python3", reason: "only as python3 -m pytest or python3 --version, as python", check: shellPythonCheck},
		{name: "echo", reason: "prints its arguments"},
		{name: "printf", reason: "prints its arguments by a format; -v, which sets a shell variable instead, asks; options come only before the format, so a glob after it is never one",
			check: shellPrintfCheck, optionGlobsHarmless: true},
		{name: "pwd", reason: "prints the working directory"},
		{name: "true", reason: "does nothing"},
		{name: "false", reason: "does nothing and fails"},
		{name: "test", reason: "tests strings and file attributes; prints and writes nothing, but -v and -R of an array element (x[…]) ask, since bash evaluates its subscript as arithmetic, which runs the $(…) in it even when quoted",
			check: shellTestCheck},
		{name: "[", reason: "is test", check: shellTestCheck},
		{name: "expr", reason: "computes with its arguments and prints the result"},
		{name: "seq", reason: "prints numbers"},
		{name: "factor", reason: "prints the prime factors of numbers"},
		{name: "sed", reason: "prints an edited stream; only scripts this check reads as GNU sed does and that only select, print and substitute pass: -i, -f, and the w, W, r, R and e commands and s///w and s///e ask",
			check: shellSedCheck},
		{name: "awk", reason: "runs an awk program over its input; only a program given on the command line with -F and -v at most, whose code (not its strings, regular expressions and comments) calls no system, getline, close or fflush, pipes nothing (|), touches no ARGV, ARGC, SYMTAB, FUNCTAB, PROCINFO or @-extension and sends no print to a file (>), passes: those run commands, write files or read other files; ENVIRON passes, since " + shellEnvironment,
			check: shellAwkCheck},
		{name: "mawk", reason: "is awk, as Debian's default", check: shellAwkCheck},
		{name: "gawk", reason: "is awk; its own options (-f, -i, -l, --load, --profile, --dump-variables) ask", check: shellAwkCheck},
		{name: "stat", reason: "prints file metadata"},
		{name: "sort", reason: "sorts lines; -o writes a file, -T writes temporary files elsewhere, --compress-program runs a program, --files0-from reads names from a file: those ask",
			check: shellRefuseOptions(shellGetopt{value: "kotST"},
				shellOptionRule{short: 'o', long: "output", risk: shellDeletes, what: "writes its output to a file, replacing it"},
				shellOptionRule{short: 'T', long: "temporary-directory", risk: shellWrites, what: "writes temporary files in another directory"},
				shellOptionRule{long: "compress-program", risk: shellRunsCode, what: "runs a program to compress temporary files"},
				shellFilesFrom)},
		{name: "uniq", reason: "drops repeated lines; its second file operand is an OUTPUT file, so two operands ask, and so does a glob that could expand to two",
			check: shellUniqCheck},
		{name: "cut", reason: "prints selected fields of each line; it has no option that writes"},
		{name: "tr", reason: "translates its input; it opens no file at all"},
		{name: "diff", reason: "compares files and prints the differences; no option of GNU diff writes, and the one program it may start is pr, for -l (sdiff and diff3 take programs and outputs, and are not listed)"},
		{name: "cmp", reason: "compares files; -l and -b print the bytes that differ, and nothing writes"},
		{name: "comm", reason: "prints the lines two sorted files share or do not"},
		{name: "join", reason: "prints the lines of two files joined on a field"},
		{name: "paste", reason: "prints files side by side"},
		{name: "nl", reason: "prints files with line numbers"},
		{name: "tac", reason: "prints files last line first"},
		{name: "rev", reason: "prints each line reversed"},
		{name: "fold", reason: "prints lines wrapped"},
		{name: "fmt", reason: "prints paragraphs refilled"},
		{name: "pr", reason: "prints files paginated"},
		{name: "column", reason: "prints its input in columns"},
		{name: "expand", reason: "prints files with tabs made spaces"},
		{name: "unexpand", reason: "prints files with spaces made tabs"},
		{name: "numfmt", reason: "prints numbers in other units"},
		{name: "tsort", reason: "prints a topological order of the pairs it reads"},
		{name: "look", reason: "prints the lines of a sorted file that start with a string"},
		{name: "shuf", reason: "prints lines in random order; -o writes a file, so it asks",
			check: shellRefuseOptions(shellGetopt{value: "ino", long: []string{"input-range", "head-count", "output", "random-source"}},
				shellOptionRule{short: 'o', long: "output", risk: shellDeletes, what: "writes its output to a file, replacing it"})},
		{name: "base64", reason: "prints files encoded, or decoded with -d, to its output; only the options of coreutils' base64 pass, none of which writes: BSD's -o writes a file and -i reads one, so an option this check does not know asks",
			check: shellBase64Check},
		{name: "base32", reason: "is base64 in base 32", check: shellBase64Check},
		{name: "basenc", reason: "is base64 in other bases", check: shellBase64Check},
		{name: "od", reason: "prints files as octal, hex or characters"},
		{name: "hexdump", reason: "prints files in hex"},
		{name: "xxd", reason: "prints files in hex, or turns hex back with -r; its second file operand is an OUTPUT file, so two operands ask, and so does a glob that could expand to two",
			check: shellXxdCheck},
		{name: "strings", reason: "prints the text in binary files; @FILE reads more arguments from a file, so it asks", check: shellStringsCheck},
		{name: "cksum", reason: "prints checksums of the files it is given; -c reads the names of the files to check from a file this check never sees, so it asks",
			check: shellSumCheck},
		{name: "md5sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "sha1sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "sha224sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "sha256sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "sha384sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "sha512sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "b2sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "sum", reason: "prints checksums, as cksum", check: shellSumCheck},
		{name: "jq", reason: "prints JSON filtered; no option or builtin writes a file or runs a program, and only the options that read the input and print pass: a filter from a file (-f), modules (-L, and import, include and modulemeta in the filter) and files read into variables (--rawfile, --slurpfile, --argfile) are read where this check cannot follow, so they ask, and so does an option jq's 1.6 and 1.7 do not list; env and $ENV pass, since " + shellEnvironment,
			check: shellJqCheck, optionGlobsHarmless: true},
		{name: "file", reason: "names the type of files; -C writes a compiled magic file, -f reads names from a file and -z and -Z may run decompressors, so they ask; every file of an -m list is checked as a path",
			check: shellFileCheck},
		{name: "rg", reason: "searches text like grep; --pre and --pre-glob run a program on every file, -z runs decompressors, --hostname-bin runs a program: those ask",
			check: shellRefuseOptions(shellGetopt{value: "ABCdefgjmMrtTE"},
				shellOptionRule{long: "pre", risk: shellRunsCode, what: "runs a program on every file it searches"},
				shellOptionRule{long: "pre-glob", risk: shellRunsCode, what: "runs a program on every file it searches"},
				shellOptionRule{short: 'z', long: "search-zip", risk: shellRunsCode, what: "runs decompression programs"},
				shellOptionRule{long: "hostname-bin", risk: shellRunsCode, what: "runs a program to find the host name"})},
		// tree reads an option's value from the next word and goes on with
		// the cluster, so every letter of a cluster is checked.
		{name: "tree", reason: "draws the directory tree; -o writes it to a file, -R writes 00Tree.html in every directory and --fromfile draws the lines of a file, so they ask",
			check: shellRefuseOptions(shellGetopt{},
				shellOptionRule{short: 'o', risk: shellDeletes, what: "writes its listing to a file, replacing it"},
				shellOptionRule{short: 'R', risk: shellDeletes, what: "writes 00Tree.html in every directory, replacing any there"},
				shellOptionRule{long: "fromfile", risk: shellOther, what: "draws a listing read from a file, whose lines it prints"},
				shellOptionRule{long: "fromtabfile", risk: shellOther, what: "draws a listing read from a file, whose lines it prints"})},
		{name: "du", reason: "sums disk usage; --files0-from asks",
			check: shellRefuseOptions(shellGetopt{value: "BdXt"}, shellFilesFrom), optionGlobsHarmless: true},
		{name: "df", reason: "prints the free space of file systems; no option writes"},
		{name: "basename", reason: "prints a name without its directory"},
		{name: "dirname", reason: "prints the directory of a name"},
		{name: "realpath", reason: "prints where a path leads"},
		{name: "readlink", reason: "prints a link's target"},
		{name: "which", reason: "prints where a command is found on PATH"},
		{name: "type", reason: "prints what the shell would run for a name"},
		{name: "command", reason: "only as command -v or -V, which print what a name is; otherwise it runs the command",
			check: shellCommandCheck},
		{name: "date", reason: "prints the date; -s, --set and an operand not starting with + set the clock, so they ask (and -f reads a file, whose lines it prints in errors)",
			check: shellDateCheck},
		{name: "cal", reason: "prints a calendar"},
		{name: "uname", reason: "prints the kernel and machine"},
		{name: "whoami", reason: "prints the user"},
		{name: "id", reason: "prints the user's and groups' ids"},
		{name: "groups", reason: "prints the user's groups"},
		{name: "nproc", reason: "prints the number of processors"},
		{name: "lscpu", reason: "prints the processors' details"},
		{name: "uptime", reason: "prints how long the system has run and its load"},
		{name: "free", reason: "prints memory use; -s repeats it and never ends, so it asks",
			check: shellRefuseOptions(shellGetopt{value: "sc", long: []string{"seconds", "count"}},
				shellOptionRule{short: 's', long: "seconds", risk: shellOther, what: "repeats and never ends"})},
		{name: "locale", reason: "prints the locale settings"},
		// The sandbox runs every command in a process namespace of its own.
		{name: "ps", reason: "lists processes, which in the sandbox are the command's own; no option writes, and e, which prints their environment, passes, since " + shellEnvironment},
		{name: "hostname", reason: "only alone or with -s, which print the host name; an operand or -F sets it, and -i, -f and the others look names up on the network",
			check: shellHostnameCheck},
		{name: "printenv", reason: "prints the environment; " + shellEnvironment},
		{name: "env", reason: "alone, prints the environment, as printenv: " + shellEnvironment + "; with a command or a variable it runs or changes something, so it asks",
			check: shellEnvCheck},
		// Output is captured, never a terminal, so git starts no pager and
		// --no-pager is not needed. status and diff may refresh .git/index, a
		// write git makes on its own. What a word check cannot see: the
		// workspace's own .git/config and .gitattributes may name programs
		// (core.fsmonitor on status, diff.external on diff, textconv drivers
		// on diff, log -p, show) that git runs as it reads; they change only
		// through an approved write and run inside the sandbox, like the test
		// code pytest runs. Nor can it see what history holds: what a
		// credential file someone committed held, git log -p and git show
		// would print, so the sandbox masks it for every view of git's
		// (gitview.go, sandbox/gitmask.go and gitlook.go); git remote -v still prints a
		// token written into a remote's URL (as cat .git/config would).
		{name: "git", reason: "read-only verbs only (status, log, diff, show, rev-parse, rev-list, merge-base, grep, ls-files, ls-tree, cat-file, blame, describe, shortlog, and branch, tag, remote and stash when they list or show) and --version, and only as the git tool's rules allow them; the sandbox masks what credential-shaped files held in history, so their stored content shows masked; --output, --textconv, --show-signature, %G formats (which run gpg) and git grep -O (a pager) ask, and so do what shows objects past the masks (cat-file --batch-all-objects with --batch), and a credential-shaped path named in a revision (HEAD:id_rsa, :.env) or a pathspec",
			check: shellGitCheck},
	}
}}

// shellEnvironment is why every way of printing the environment runs
// without asking (printenv, env, ps e, awk's ENVIRON, jq's env and
// $ENV): the sandbox starts each command with an environment of its own,
// never shelldon's, whose environment may hold a provider's key. It is
// the sandbox's base (PATH, HOME=/tmp, LANG and two settings for Python),
// the egress proxy's loopback address in a run approved for the network,
// and what nspawn sets (container, container_uuid, container_host_id and
// container_host_version_id, USER, LOGNAME, PWD and NOTIFY_SOCKET), as
// `shelldon sandbox run -- env` shows and sandbox's
// TestACommandSeesNoneOfShelldonsEnvironment holds. /proc/*/environ is
// read by an absolute path, which asks as every path outside the
// workspace does.
const shellEnvironment = "the environment is the sandbox's own, set for each command, and holds nothing of shelldon's"

// shellSafeIndex finds a listed command by name. Its build is set by
// init, not in its declaration: the checks judge commands they run (find
// -exec), so the list refers to itself through the index.
var shellSafeIndex lazy[map[string]*shellCommand]

func init() {
	shellSafeIndex.build = indexShellSafe
}

// indexShellSafe is shellSafeIndex's build.
func indexShellSafe() map[string]*shellCommand {
	commands := shellSafeCommands.get()
	index := make(map[string]*shellCommand, len(commands))
	for i := range commands {
		index[commands[i].name] = &commands[i]
	}
	return index
}

// shellLookup finds the listed command that name with args runs, and the
// arguments it receives: python -m pytest and python3 -m pytest are
// pytest.
func shellLookup(name string, args []shellWord) (*shellCommand, []shellWord) {
	if (name == "python" || name == "python3") && len(args) >= 2 && args[0].value == "-m" && args[1].value == "pytest" {
		return shellSafeIndex.get()["pytest"], args[2:]
	}
	return shellSafeIndex.get()[name], args
}

// shellGetopt describes a command's options for scan. Only options known
// to take a value may be listed: a flag listed by mistake would hide the
// next word from the check.
type shellGetopt struct {
	// value are the short letters that take a value: the rest of the
	// cluster, or else the next word.
	value string
	// optional are the short letters whose value, if any, is the rest of
	// the cluster (sed -i.bak).
	optional string
	// long are the long names that take the next word as their value
	// when written without "=".
	long []string
	// known are all the long names, when the check must tell an unknown
	// option from a known one; getopt_long takes any unambiguous prefix
	// of one, so a prefix is resolved among known, or among long without
	// it.
	known []string
	// flags, when set, are the short letters that take no value: a letter
	// in neither flags, value nor optional is then unknown.
	flags string
}

// shellOption is one option found in a command's arguments.
type shellOption struct {
	name  string // "-o" or "--output", a long name resolved from its prefix
	value string // the value given with it, if the option takes one
	text  string // the word or words as written
	at    int    // the index in the arguments of the word holding the value
	// unknown means the spec lists the command's options (known, flags)
	// and this is none of them, or an ambiguous prefix.
	unknown bool
	// resolved means a long name is one the spec lists, spelled out or
	// resolved from its prefix.
	resolved bool
}

func (o shellOption) long() bool { return strings.HasPrefix(o.name, "--") }

// scan reads the arguments as GNU getopt_long does, calling visit for
// each option and returning the indexes of the operands. "-abc" is a
// cluster of short options; "--name=value" and "--name" are long
// options; "--" ends the options; getopt reads options after operands
// too.
func (c *shellCall) scan(spec shellGetopt, visit func(shellOption)) []int {
	var operands []int
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		v := w.value
		switch {
		case v == "--":
			for k := i + 1; k < len(c.args); k++ {
				operands = append(operands, k)
			}
			return operands
		case strings.HasPrefix(v, "--"):
			name, value, hasValue := strings.Cut(v[2:], "=")
			name, known := spec.resolve(name)
			o := shellOption{name: "--" + name, value: value, text: w.show(), at: i, resolved: known, unknown: !known && spec.known != nil}
			if !hasValue && known && slices.Contains(spec.long, name) && i+1 < len(c.args) {
				i++
				o.value, o.text, o.at = c.args[i].value, o.text+" "+c.args[i].show(), i
			}
			visit(o)
		case len(v) > 1 && v[0] == '-':
			i = c.cluster(spec, i, visit)
		default:
			operands = append(operands, i)
		}
	}
	return operands
}

// resolve returns the long option name stands for, as getopt_long reads
// it: an exact name, or the one name it is a prefix of.
func (spec shellGetopt) resolve(name string) (string, bool) {
	names := spec.known
	if names == nil {
		names = spec.long
	}
	if name == "" || slices.Contains(names, name) {
		return name, name != ""
	}
	found := ""
	for _, n := range names {
		if strings.HasPrefix(n, name) {
			if found != "" {
				return name, false
			}
			found = n
		}
	}
	return cmp.Or(found, name), found != ""
}

// cluster visits the short options in c.args[i] and returns the index of
// the last word they use.
func (c *shellCall) cluster(spec shellGetopt, i int, visit func(shellOption)) int {
	v, text := c.args[i].value, c.args[i].show()
	for j := 1; j < len(v); j++ {
		o := shellOption{name: "-" + v[j:j+1], text: text, at: i,
			unknown: spec.flags != "" && strings.IndexByte(spec.flags+spec.value+spec.optional, v[j]) < 0}
		switch {
		case strings.IndexByte(spec.optional, v[j]) >= 0:
			o.value = v[j+1:]
		case strings.IndexByte(spec.value, v[j]) >= 0:
			o.value = v[j+1:]
			if o.value == "" && i+1 < len(c.args) {
				i++
				o.value, o.text, o.at = c.args[i].value, text+" "+c.args[i].show(), i
			}
		default:
			visit(o)
			continue
		}
		visit(o)
		break
	}
	return i
}

// words returns the arguments at the given indexes.
func (c *shellCall) words(at []int) []shellWord {
	words := make([]shellWord, len(at))
	for k, i := range at {
		words[k] = c.args[i]
	}
	return words
}

// shellOptionRule is an option a listed command may not use.
type shellOptionRule struct {
	short byte   // its short letter, or 0
	long  string // its long name without "--", or ""
	risk  shellRisk
	what  string // what it does, for the note
}

// matches reports whether o spells the rule's option: the short letter,
// or the long name or any prefix of it, since getopt_long takes an
// unambiguous prefix ("--out" for "--output"); an ambiguous prefix is
// refused as well. A name the spec resolved is matched whole (jq's --arg
// is not --argfile).
func (r shellOptionRule) matches(o shellOption) bool {
	if o.long() {
		name := o.name[2:]
		if o.resolved {
			return name == r.long
		}
		return r.long != "" && name != "" && strings.HasPrefix(r.long, name)
	}
	return r.short != 0 && o.name[1] == r.short
}

// shellFilesFrom is --files0-from, which takes the names of the files to
// read from a file, where this check cannot see them.
var shellFilesFrom = shellOptionRule{long: "files0-from", risk: shellOther, what: "reads the names of the files to read from a file"}

// shellRefuseOptions returns a check that refuses the options rules name.
func shellRefuseOptions(spec shellGetopt, rules ...shellOptionRule) func(c *shellCall) {
	return func(c *shellCall) {
		c.scan(spec, func(o shellOption) { c.refuseOption(o, rules) })
	}
}

// refuseOption refuses o if a rule names it.
// refuseOption refuses o if a rule names it, or else if it is an option
// the spec it was read with does not know (a spec that lists the
// command's options): what this check does not know could write or read
// anything.
func (c *shellCall) refuseOption(o shellOption, rules []shellOptionRule) {
	for _, r := range rules {
		if r.matches(o) {
			c.refuse(fmt.Sprintf("%s %s %s", c.base, o.name, r.what), r.risk, r.what, c.base+" "+o.text)
			return
		}
	}
	if o.unknown {
		c.refuse(fmt.Sprintf("%s %s is an option this check does not know", c.base, o.name), shellUnknown,
			"uses an option this check does not know", c.base+" "+o.text)
	}
}

// shellTailCheck refuses following a file, also in the obsolete forms
// "-5f" (read as a cluster) and "+5f".
func shellTailCheck(c *shellCall) {
	follow := []shellOptionRule{
		{short: 'f', long: "follow", risk: shellOther, what: "follows the file and never ends"},
		{short: 'F', risk: shellOther, what: "follows the file and never ends"},
	}
	operands := c.scan(shellGetopt{value: "cns"}, func(o shellOption) { c.refuseOption(o, follow) })
	for _, w := range c.words(operands) {
		if strings.HasPrefix(w.value, "+") && strings.ContainsAny(w.value, "fF") {
			c.refuse("tail "+w.show()+" follows the file and never ends", shellOther, "follows the file and never ends", c.show(w))
		}
	}
}

// shellFindCheck refuses find's actions that delete, write or run, and
// reads the command an -exec runs for the note.
func shellFindCheck(c *shellCall) {
	for i := 0; i < len(c.args); i++ {
		switch action := c.args[i].value; action {
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(c.args) && c.args[end].value != ";" && c.args[end].value != "+" {
				end++
			}
			inner := slices.Clone(c.args[i+1 : end])
			c.refuse("find "+action+" runs a command on every match", shellRunsCode,
				"runs "+shellShow(shellJoinText(inner))+" on every match", "find "+action)
			for k := range inner {
				if inner[k].value == "{}" {
					inner[k].text = "each match"
				}
			}
			if len(inner) > 0 {
				c.a.simple(inner)
			}
			i = end
		case "-delete":
			c.refuse("find -delete deletes every match", shellDeletes, "deletes every match", "find -delete")
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			file := "a file"
			if i+1 < len(c.args) {
				file = c.args[i+1].show()
			}
			c.refuse("find "+action+" writes a file", shellDeletes, "overwrites "+file, "find "+action)
			i++
			if action == "-fprintf" {
				i++
			}
		case "-files0-from":
			c.refuse("find -files0-from reads its starting points from a file", shellOther,
				"reads the names of the files to search from a file", "find -files0-from")
			i++
		}
	}
}

// shellJoinText returns words as written, joined by spaces.
func shellJoinText(words []shellWord) string {
	texts := make([]string, len(words))
	for i, w := range words {
		texts[i] = w.text
	}
	return strings.Join(texts, " ")
}

// shellUniqFlags are uniq's short options that take no value (digits are
// the obsolete -N), shellUniqValue those that do.
const (
	shellUniqFlags = "cdDiuz0123456789"
	shellUniqValue = "fsw"
)

// shellUniqLong are uniq's long options.
var shellUniqLong = []string{"count", "repeated", "all-repeated", "group", "ignore-case", "unique",
	"zero-terminated", "skip-fields", "skip-chars", "check-chars", "help", "version"}

// shellUniqCheck allows one input operand at most: uniq writes its second
// operand. A glob operand could expand to two, and an unknown option
// could hide a word from the count, so both ask.
func shellUniqCheck(c *shellCall) {
	spec := shellGetopt{value: shellUniqValue, flags: shellUniqFlags, long: []string{"skip-fields", "skip-chars", "check-chars"}, known: shellUniqLong}
	operands := c.words(c.scan(spec, func(o shellOption) {
		if o.unknown {
			c.refuse("uniq "+o.name+" is an option this check does not know", shellUnknown,
				"uses an option this check does not know", c.base+" "+o.text)
		}
	}))
	for _, w := range operands {
		if w.glob {
			c.refuse("uniq "+w.show()+" could expand to a second file, which uniq overwrites", shellDeletes,
				"may overwrite the second file "+w.show()+" expands to", c.show(w))
		}
	}
	if len(operands) > 1 {
		c.refuse("uniq writes its second operand ("+operands[1].show()+")", shellDeletes,
			"overwrites "+operands[1].show(), c.show(operands...))
	}
}

// shellSedFlags are the sed options that change only how it reads and
// prints; shellSedLong the same, long.
const shellSedFlags = "nrEsuzb"

var shellSedLong = []string{"--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered",
	"--null-data", "--zero-terminated", "--posix", "--debug", "--sandbox", "--binary", "--line-length",
	"--help", "--version"}

// shellSedCheck allows sed with scripts that only select, print and
// substitute (see shellSedScript), given with -e or as the first operand.
func shellSedCheck(c *shellCall) {
	var scripts []string
	given := false
	spec := shellGetopt{value: "el", optional: "i", long: []string{"expression", "file", "line-length"}}
	operands := c.scan(spec, func(o shellOption) {
		switch {
		case o.name == "-e" || o.name == "--expression":
			scripts = append(scripts, o.value)
			c.args[o.at].code = true
			given = true
		case o.name == "-i" || o.name == "--in-place":
			c.refuse("sed "+o.name+" rewrites files in place", shellDeletes, "rewrites files in place", c.base+" "+o.text)
		case o.name == "-f" || o.name == "--file":
			c.refuse("sed "+o.name+" reads its script from a file", shellOther, "runs a sed script from a file", c.base+" "+o.text)
		case o.name == "-l" || slices.Contains(shellSedLong, o.name) || !o.long() && strings.Contains(shellSedFlags, o.name[1:]):
		default:
			c.refuse("sed "+o.name+" is an option this check does not know", shellUnknown,
				"uses an option this check does not know", c.base+" "+o.text)
		}
	})
	if !given && len(operands) > 0 {
		scripts = append(scripts, c.args[operands[0]].value)
		c.args[operands[0]].code = true
	}
	if problem, ok := shellSedScript(strings.Join(scripts, "\n")); !ok {
		c.refuse("the sed script "+problem.what, problem.risk, problem.what, problem.how)
	}
}

// shellGitReadVerbs are the git verbs that only read. branch, tag, remote
// and stash only read when they list or show, which shellGitLists checks.
var shellGitReadVerbs = []string{"status", "log", "diff", "show", "rev-parse", "rev-list", "merge-base", "grep",
	"ls-files", "ls-tree", "cat-file", "blame", "describe", "shortlog", "branch", "tag", "remote", "stash"}

// shellGitReadRules are options of the read verbs that write or run.
var shellGitReadRules = []shellOptionRule{
	{long: "output", risk: shellDeletes, what: "writes its output to a file, replacing it"},
	{long: "textconv", risk: shellRunsCode, what: "runs the conversion programs the configuration names"},
	{long: "show-signature", risk: shellRunsCode, what: "runs gpg to check signatures"},
	{long: "filters", risk: shellRunsCode, what: "runs the filter programs the configuration names"},
}

// shellGitGrepRules are git grep's options that run a program.
var shellGitGrepRules = []shellOptionRule{
	{short: 'O', long: "open-files-in-pager", risk: shellRunsCode, what: "opens the files it found in a pager, a program"},
}

// shellGitOwnOptions are options of git's read verbs that begin like one
// of shellGitReadRules but are options of their own, which git's parser
// takes as written: diff's --text is not --textconv, rev-list's --filter
// is not cat-file's --filters.
var shellGitOwnOptions = []string{"text", "filter"}

// shellGitGrepOptions are git grep's options that take a value (-e and -f
// are read apart: the patterns they give).
var shellGitGrepOptions = shellGetopt{value: "efABCm", optional: "O",
	long: []string{"max-depth", "threads", "max-count", "context", "after-context", "before-context"}}

// shellGitHistoryVerbs walk history with git's revision and diff options.
var shellGitHistoryVerbs = []string{"log", "show", "diff", "rev-list", "shortlog", "stash"}

// shellGitHistoryOptions are the revision and diff options that take a
// value: a pickaxe string (-S, -G), a pattern (--grep, --author,
// --committer, --grep-reflog), a count (-n), a range (-L); -U, -M, -C,
// -B, -l and -O take theirs glued, if any.
var shellGitHistoryOptions = shellGetopt{value: "SGnL", optional: "UMCBlO",
	long: []string{"grep", "author", "committer", "grep-reflog"}}

// shellGitPatternOptions give a pattern or a string to look for, never a
// path: a key's name searched for (git log -S OPENAI_API_KEY) is no file
// it reads, and what history held of it shows masked.
var shellGitPatternOptions = []string{"-S", "-G", "--grep", "--author", "--committer", "--grep-reflog"}

// shellGitCheck lets git run without asking only when the git tool's own
// rules ([CheckGit]) allow the command and its verb only reads.
func shellGitCheck(c *shellCall) {
	if len(c.args) == 1 && c.args[0].value == "--version" {
		return
	}
	argv := make([]string, 0, len(c.args)+1)
	argv = append(argv, "git")
	for _, w := range c.args {
		argv = append(argv, w.value)
	}
	verdict, err := CheckGit(argv)
	if unmasking := slices.IndexFunc(c.args, func(w shellWord) bool { return w.value == "--no-replace-objects" }); unmasking >= 0 {
		c.refuse("git --no-replace-objects "+gitGlobalReasons.get()["--no-replace-objects"], shellSecrets,
			"shows what credential-shaped files held in git's history, past the sandbox's masks", c.show(c.args[unmasking]))
		return
	}
	if err != nil {
		why := strings.TrimPrefix(err.Error(), ErrGitRefused.Error()+": ")
		c.refuse("git: "+why, shellRunsCode, "runs git as the git tool never would", c.show(c.args...))
		return
	}
	verb := slices.IndexFunc(c.args, func(w shellWord) bool { return !strings.HasPrefix(w.value, "-") })
	if verb < 0 {
		c.refuse("git has no subcommand", shellOther, "runs git", "git")
		return
	}
	rest := c.args[verb+1:]
	sub := verdict.Subcommand
	how := "git " + sub
	if !slices.Contains(shellGitReadVerbs, sub) || !shellGitLists(sub, rest) {
		c.refuse("git "+sub+" with these arguments does more than read", shellGitRisk(verdict), verdict.Note, how)
		return
	}
	read := &shellCall{a: c.a, base: how, args: rest}
	patterns := read.gitOptions(sub)
	if sub == "cat-file" {
		values := make([]string, len(rest))
		for i, w := range rest {
			values[i] = w.value
		}
		if gitPrintsEveryObject(values) {
			read.refuse("git cat-file "+gitEveryObjectNote, shellSecrets, gitEveryObjectNote, how+" --batch-all-objects")
		}
	}
	for i, w := range rest {
		if patterns[i] {
			continue
		}
		if !strings.HasPrefix(w.value, "-") {
			rest[i].revision = true
		}
		if strings.Contains(w.value, "%G") {
			read.refuse("git "+sub+" with a %G format runs gpg to check signatures", shellRunsCode,
				"runs gpg to check signatures", read.show(w))
		}
		if !strings.HasPrefix(w.value, "-") {
			read.gitPath(sub, w)
		}
	}
}

// gitOptions refuses the options of the read verb sub that write or run,
// and returns the indexes of the words that are patterns or pattern
// files, which are no revisions and no pathspecs: git grep's pattern (its
// first operand, or those of -e and -f) and the values of
// shellGitPatternOptions. A pattern is marked as code, so that it is not
// judged as a path; a pattern file (-f) is.
func (c *shellCall) gitOptions(sub string) map[int]bool {
	spec, rules := shellGetopt{}, shellGitReadRules
	history := slices.Contains(shellGitHistoryVerbs, sub)
	switch {
	case sub == "grep":
		spec, rules = shellGitGrepOptions, slices.Concat(shellGitReadRules, shellGitGrepRules)
	case history:
		spec = shellGitHistoryOptions
	}
	patterns := map[int]bool{}
	given := false // git grep's pattern came with -e or -f
	operands := c.scan(spec, func(o shellOption) {
		switch {
		case o.long() && slices.Contains(shellGitOwnOptions, o.name[2:]):
		case sub == "grep" && (o.name == "-e" || o.name == "-f"):
			given, patterns[o.at] = true, true
			c.args[o.at].code = o.name == "-e"
		case history && slices.Contains(shellGitPatternOptions, o.name):
			patterns[o.at] = true
			c.args[o.at].code = true
		default:
			c.refuseOption(o, rules)
		}
	})
	if sub == "grep" && !given && len(operands) > 0 {
		patterns[operands[0]] = true
		c.args[operands[0]].code = true
	}
	return patterns
}

// gitPath refuses a word of a read verb that names a credential-shaped
// file to git: a path in a revision (HEAD:id_rsa, :id_rsa for the index,
// :0:.env for a stage) or in a pathspec's magic (:(icase)ID_RSA); a plain
// path is judged by the path rules every command's words are. What git
// printed of such a file would show masked (the sandbox masks what every
// credential-shaped path held in history), but a name given asks, so that
// the owner hears of it. A glob is no such name: git matches it against
// every path, and what it reaches of a credential shows masked, so that
// "git log -p -- '*.py'" runs free.
func (c *shellCall) gitPath(sub string, w shellWord) {
	_, after, ok := strings.Cut(w.value, ":")
	if !ok {
		return
	}
	for piece := range strings.SplitSeq(after, ":") {
		if strings.HasPrefix(piece, "(") {
			_, piece, _ = strings.Cut(piece, ")")
		}
		if reason, denied := Denied(piece); denied {
			c.refuse("git "+sub+" "+w.show()+" reads a credential-shaped file: "+reason,
				shellSecrets, "touches a credential-shaped file", c.show(w))
		}
	}
}

// shellGitRisk ranks a git command that does more than read.
func shellGitRisk(v GitVerdict) shellRisk {
	switch {
	case v.Network:
		return shellNetwork
	case slices.Contains([]string{"rm", "restore", "checkout", "reset", "mv", "stash"}, v.Subcommand),
		strings.Contains(v.Note, "delet"), strings.Contains(v.Note, "discard"), strings.Contains(v.Note, "throws away"):
		return shellDeletes
	}
	return shellWrites
}

// shellGitLists reports whether a read verb with args only reads: the
// verbs that also change things (branch, tag, remote, stash) only when
// they list or show.
func shellGitLists(sub string, args []shellWord) bool {
	switch sub {
	case "branch":
		return shellGitBranchLists(args)
	case "tag":
		return shellGitTagLists(args)
	case "remote":
		// "git remote" and "git remote -v" list; its verbs change the
		// configuration or ask the remote, so they ask.
		return !slices.ContainsFunc(args, func(w shellWord) bool { return w.value != "-v" && w.value != "--verbose" })
	case "stash":
		// git stash alone pushes; list and show read, and take the
		// options of git log and git diff, which the read rules check.
		return len(args) > 0 && (args[0].value == "list" || args[0].value == "show")
	}
	return true
}

// shellGitBranchFlags are git branch's short options that only list.
const shellGitBranchFlags = "arvli"

// shellGitBranchLong are git branch's long options that only list; those
// in shellGitBranchValued take the next word when written without "=".
var (
	shellGitBranchLong = []string{"all", "remotes", "verbose", "list", "ignore-case", "show-current",
		"no-color", "color", "no-column", "column", "sort", "format", "contains", "no-contains",
		"merged", "no-merged", "points-at", "abbrev", "no-abbrev", "omit-empty"}
	shellGitBranchValued = []string{"sort", "format", "contains", "no-contains", "merged", "no-merged", "points-at"}
)

// shellGitBranchLists reports whether git branch with args only lists:
// only listing options, and names only as patterns after --list or -l
// (elsewhere a name creates a branch).
func shellGitBranchLists(args []shellWord) bool {
	lists, names, other := false, false, false
	probe := &shellCall{args: args}
	operands := probe.scan(shellGetopt{long: shellGitBranchValued, known: shellGitBranchLong}, func(o shellOption) {
		switch {
		case o.name == "-l" || o.name == "--list":
			lists = true
		case o.long():
			other = other || !slices.Contains(shellGitBranchLong, o.name[2:])
		default:
			other = other || !strings.Contains(shellGitBranchFlags, o.name[1:])
		}
	})
	names = len(operands) > 0
	return !other && (lists || !names)
}

// shellGrepLong are GNU grep's long options (3.8); shellGrepValued those
// that take a value, from the next word when written without "=".
var (
	shellGrepLong = []string{"basic-regexp", "extended-regexp", "fixed-regexp", "fixed-strings", "perl-regexp",
		"after-context", "before-context", "binary-files", "byte-offset", "context", "color", "colour", "count",
		"devices", "directories", "dereference-recursive", "exclude", "exclude-from", "exclude-dir", "file",
		"files-with-matches", "files-without-match", "group-separator", "help", "include", "ignore-case",
		"no-ignore-case", "initial-tab", "label", "line-buffered", "line-number", "line-regexp", "max-count",
		"no-filename", "no-group-separator", "no-messages", "null", "null-data", "only-matching", "quiet",
		"recursive", "regexp", "invert-match", "silent", "text", "binary", "unix-byte-offsets", "version",
		"with-filename", "word-regexp"}
	shellGrepValued = []string{"after-context", "before-context", "binary-files", "context", "devices",
		"directories", "exclude", "exclude-from", "exclude-dir", "file", "group-separator", "include", "label",
		"max-count", "regexp"}
)

// shellGrepCheck finds grep's pattern, which grep matches and never
// opens, so that it may look like a path or a credential's name (grep -rn
// token src): the values of -e, or else the first operand. It is sure of
// the pattern only when it knows every option (grep 3.8's getopt string
// and long options, abbreviations resolved), and a glob is never taken
// for it, since it would expand into the pattern and files to read.
func shellGrepCheck(c *shellCall) {
	sure, given := true, false
	spec := shellGetopt{value: "ABCDXdefm", flags: "0123456789EFGHIPTUVabchiLlnoqRrsuvwxyZz",
		long: shellGrepValued, known: shellGrepLong}
	operands := c.scan(spec, func(o shellOption) {
		switch {
		case o.unknown:
			sure = false
		case o.name == "-e" || o.name == "--regexp":
			given = true
			if !c.args[o.at].glob {
				c.args[o.at].code = true
			}
		case o.name == "-f" || o.name == "--file":
			given = true
		}
	})
	if sure && !given && len(operands) > 0 && !c.args[operands[0]].glob {
		c.args[operands[0]].code = true
	}
}

// shellPythonVersions are the ways to ask Python for its version only.
var shellPythonVersions = []string{"--version", "-V", "-VV"}

// shellPythonCheck lets python run only to print its version; python -m
// pytest never reaches it (shellLookup makes it pytest).
func shellPythonCheck(c *shellCall) {
	if len(c.args) == 1 && slices.Contains(shellPythonVersions, c.args[0].value) {
		return
	}
	c.a.refuse(c.base + " runs Python code; only " + c.base + " -m pytest and " + c.base + " --version run without asking")
	c.python()
}

// shellPrintfCheck refuses -v, bash's printf into a variable; options are
// read only before the format.
func shellPrintfCheck(c *shellCall) {
	if len(c.args) > 0 && strings.HasPrefix(c.args[0].value, "-v") {
		c.refuse("printf -v sets a shell variable", shellOther, "sets a shell variable", c.show(c.args[0]))
	}
}

// shellCommandCheck lets command run only to say what a name is (-v,
// -V); otherwise it runs the command, judged as a command of its own.
func shellCommandCheck(c *shellCall) {
	if len(c.args) > 1 && (c.args[0].value == "-v" || c.args[0].value == "-V") &&
		!slices.ContainsFunc(c.args[1:], func(w shellWord) bool { return strings.HasPrefix(w.value, "-") }) {
		return
	}
	c.a.refuse("command runs the command it names; only command -v and -V run without asking")
	c.wrapped(c.leading(""))
}

// shellEnvCheck lets env run only to print the environment.
func shellEnvCheck(c *shellCall) {
	if !slices.ContainsFunc(c.args, func(w shellWord) bool { return w.value != "-0" && w.value != "--null" }) {
		return
	}
	c.a.refuse("env with a command, a variable or an option other than -0 runs or changes something")
	c.env()
}

// shellHostnameCheck lets hostname run only to print the name.
func shellHostnameCheck(c *shellCall) {
	if !slices.ContainsFunc(c.args, func(w shellWord) bool { return w.value != "-s" && w.value != "--short" }) {
		return
	}
	c.refuse("hostname with an operand or an option other than -s sets the host name, reads it from a file or looks names up on the network",
		shellPrivilege, "may set the host name", c.show(c.args...))
}

// shellDateLong are date's long options (GNU coreutils 9.1).
var shellDateLong = []string{"date", "debug", "file", "iso-8601", "resolution", "rfc-email", "rfc-3339",
	"reference", "set", "utc", "universal", "help", "version"}

// shellDateCheck refuses setting the clock: -s, --set, and an operand not
// starting with + (MMDDhhmm…), which GNU date takes as the time to set.
func shellDateCheck(c *shellCall) {
	set := shellOptionRule{short: 's', long: "set", risk: shellPrivilege, what: "sets the system clock"}
	spec := shellGetopt{value: "dfrs", optional: "I", long: []string{"date", "file", "reference", "set", "rfc-3339"}, known: shellDateLong}
	operands := c.scan(spec, func(o shellOption) { c.refuseOption(o, []shellOptionRule{set}) })
	for _, w := range c.words(operands) {
		if !strings.HasPrefix(w.value, "+") {
			c.refuse("date "+w.show()+" sets the system clock", shellPrivilege, "sets the system clock", c.show(w))
		}
	}
}

// shellXxdValued are xxd's options that take a value, with the rest of
// the long spelling xxd also accepts (-c or -cols): written alone or so
// spelled, the value is the next word, else the rest of the word.
var shellXxdValued = lazy[map[byte]string]{build: func() map[byte]string {
	return map[byte]string{'c': "ols", 'g': "roupsize", 'l': "en", 'n': "ame", 'o': "ffset", 's': "eek", 'R': ""}
}}

// shellXxdCheck allows one input operand at most, as for uniq: xxd writes
// its second. xxd reads each option by its first letter, so -r is
// -revert, and stops at the first word that is none, after which every
// word is an operand (xxd in -r writes a file named -r); a letter it
// does not know asks.
func shellXxdCheck(c *shellCall) {
	var operands []shellWord
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		v := w.value
		if v == "--" {
			operands = append(operands, c.args[i+1:]...)
			break
		}
		if len(v) < 2 || v[0] != '-' {
			operands = append(operands, c.args[i:]...)
			break
		}
		if rest, valued := shellXxdValued.get()[v[1]]; valued {
			if len(v) == 2 || rest != "" && strings.HasPrefix(v[2:], rest) {
				i++
			}
			continue
		}
		if strings.IndexByte("abCdEehipruv", v[1]) < 0 {
			c.refuse("xxd "+w.show()+" is an option this check does not know", shellUnknown,
				"uses an option this check does not know", c.show(w))
		}
	}
	for _, w := range operands {
		if w.glob {
			c.refuse("xxd "+w.show()+" could expand to a second file, which xxd overwrites", shellDeletes,
				"may overwrite the second file "+w.show()+" expands to", c.show(w))
		}
	}
	if len(operands) > 1 {
		c.refuse("xxd writes its second operand ("+operands[1].show()+")", shellDeletes,
			"overwrites "+operands[1].show(), c.show(operands...))
	}
}

// shellStringsCheck refuses @FILE, from which binutils read more
// arguments, files to read among them, that this check cannot see.
func shellStringsCheck(c *shellCall) {
	for _, w := range c.args {
		if strings.HasPrefix(w.value, "@") {
			c.refuse("strings "+w.show()+" reads more arguments from a file", shellUnknown,
				"reads more arguments from a file", c.show(w))
		}
	}
}

// shellFileLong are file's long options (file 5.44); shellFileValued
// those that take the next word.
var (
	shellFileLong = []string{"apple", "brief", "checking-printout", "compile", "dereference", "exclude",
		"exclude-quiet", "extension", "files-from", "help", "keep-going", "list", "magic-file", "mime",
		"mime-encoding", "mime-type", "no-buffer", "no-dereference", "no-pad", "no-sandbox", "parameter",
		"preserve-date", "print0", "raw", "separator", "special-files", "uncompress", "uncompress-noreport",
		"version"}
	shellFileValued = []string{"exclude", "exclude-quiet", "files-from", "magic-file", "parameter", "separator"}
)

// shellFileCheck refuses file's options that write, run or read names
// from a file, and checks every file of an -m list (magic:files, colon
// separated) as a path: -m a:/etc/passwd reads /etc/passwd.
func shellFileCheck(c *shellCall) {
	rules := []shellOptionRule{
		{short: 'C', long: "compile", risk: shellDeletes, what: "writes a compiled magic file, replacing any there"},
		{short: 'z', long: "uncompress", risk: shellRunsCode, what: "may run decompression programs"},
		{short: 'Z', long: "uncompress-noreport", risk: shellRunsCode, what: "may run decompression programs"},
		{short: 'f', long: "files-from", risk: shellOther, what: "reads the names of the files to examine from a file"},
	}
	spec := shellGetopt{value: "eFfmP", long: shellFileValued, known: shellFileLong}
	c.scan(spec, func(o shellOption) {
		c.refuseOption(o, rules)
		if o.name != "-m" && o.name != "--magic-file" {
			return
		}
		for piece := range strings.SplitSeq(o.value, ":") {
			c.checkPath(shellWord{value: piece, text: piece, literal: true}, c.base+" "+o.text)
		}
	})
}

// shellAwkCheck lets awk run a program given on the command line that
// only reads its input and prints (see shellAwkProgram); the only
// options are -F and -v. -f runs a program from a file this check cannot
// read, and the rest load libraries (gawk -l, -i), write files (gawk
// --profile, --dump-variables) or are mawk's -W.
func shellAwkCheck(c *shellCall) {
	program := -1
scan:
	for i := 0; i < len(c.args); i++ {
		switch v := c.args[i].value; {
		case v == "--":
			program = i + 1
			break scan
		case v == "-F" || v == "-v":
			i++
		case strings.HasPrefix(v, "-F") || strings.HasPrefix(v, "-v"):
		case len(v) > 1 && v[0] == '-':
			c.refuse(c.base+" "+c.args[i].show()+" is an option this check does not read; only -F and -v are",
				shellRunsCode, "runs an awk program with options that may load or write files", c.show(c.args[i]))
			return
		default:
			program = i
			break scan
		}
	}
	if program < 0 || program >= len(c.args) {
		c.refuse(c.base+" has no program", shellOther, "runs awk without a program", c.base)
		return
	}
	w := &c.args[program]
	if w.glob {
		c.refuse("the awk program "+w.show()+" is a glob", shellOther, "expands a glob into an awk program", c.show(*w))
		return
	}
	w.code = true
	if what := shellAwkProgram(w.value); what != "" {
		c.refuse("the awk program "+what, shellRunsCode, "runs an awk program that can run commands or write files", c.base)
	}
}

// shellGitTagFlags are git tag's short options that only list (-n takes
// its count glued, -n5); shellGitTagLong its long ones, and
// shellGitTagValued those that take the next word.
const shellGitTagFlags = "lni"

var (
	shellGitTagLong = []string{"list", "sort", "contains", "no-contains", "merged", "no-merged", "points-at",
		"column", "no-column", "format", "color", "ignore-case", "omit-empty"}
	shellGitTagValued = []string{"sort", "contains", "no-contains", "merged", "no-merged", "points-at", "format"}
)

// shellGitTagLists reports whether git tag with args only lists: only
// listing options, and names only as patterns after --list or -l
// (elsewhere a name creates a tag).
func shellGitTagLists(args []shellWord) bool {
	lists, other := false, false
	probe := &shellCall{args: args}
	operands := probe.scan(shellGetopt{optional: "n", long: shellGitTagValued, known: shellGitTagLong}, func(o shellOption) {
		switch {
		case o.name == "-l" || o.name == "--list":
			lists = true
		case o.long():
			other = other || o.unknown
		default:
			other = other || !strings.Contains(shellGitTagFlags, o.name[1:])
		}
	})
	return !other && (lists || len(operands) == 0)
}

// shellJqLong are the long options of jq 1.6 and 1.7; shellJqValued
// those that take the next word (--arg and --argjson take two, the
// second of which this check reads as an operand, which only makes it
// stricter).
var (
	shellJqLong = []string{"seq", "stream", "stream-errors", "slurp", "raw-input", "null-input", "compact-output", "tab",
		"indent", "color-output", "monochrome-output", "ascii-output", "unbuffered", "sort-keys", "raw-output", "raw-output0",
		"join-output", "exit-status", "arg", "argjson", "args", "jsonargs", "from-file", "library-path", "rawfile",
		"slurpfile", "argfile", "help", "version", "build-configuration", "debug-dump-disasm", "debug-trace"}
	shellJqValued = []string{"indent", "arg", "argjson", "from-file", "library-path", "rawfile", "slurpfile", "argfile"}
)

// shellJqReads are jq's options that read a file this check does not
// follow: a filter, modules, or a whole file bound to a variable.
var shellJqReads = []shellOptionRule{
	{short: 'f', long: "from-file", risk: shellOther, what: "reads its filter from a file this check does not read"},
	{short: 'L', long: "library-path", risk: shellOther, what: "loads modules from a directory this check does not read"},
	{long: "rawfile", risk: shellOther, what: "reads a file into a variable by an option this check does not follow"},
	{long: "slurpfile", risk: shellOther, what: "reads a file into a variable by an option this check does not follow"},
	{long: "argfile", risk: shellOther, what: "reads a file into a variable by an option this check does not follow"},
}

// shellJqCheck lets jq read its input and print: it refuses the options
// that read other files (shellJqReads), every option jq does not list, a
// filter given as a glob (the first name it expands to is the filter),
// and a filter that imports or includes a module or a data file, or asks
// for a module's metadata: jq finds those by name along a search path,
// where this check cannot follow it. The words are read without jq's
// grammar, so a string holding one of those words asks too.
func shellJqCheck(c *shellCall) {
	spec := shellGetopt{value: "fL", flags: "nrjacsCMSeRhV", long: shellJqValued, known: shellJqLong}
	operands := c.scan(spec, func(o shellOption) { c.refuseOption(o, shellJqReads) })
	if len(operands) > 0 && c.args[operands[0]].glob {
		filter := c.args[operands[0]]
		c.refuse("the jq filter "+filter.show()+" is a glob", shellOther, "expands a glob into a jq filter", c.show(filter))
	}
	for _, w := range c.args {
		if strings.Contains(w.value, "import") || strings.Contains(w.value, "include") || strings.Contains(w.value, "modulemeta") {
			c.refuse("jq "+w.show()+" may load a module or data file by name", shellOther,
				"loads a jq module or data file by name", c.show(w))
		}
	}
}

// shellBase64Long are the long options of coreutils' base64, base32 and
// basenc (9.1).
var shellBase64Long = []string{"decode", "ignore-garbage", "wrap", "help", "version", "base64", "base64url",
	"base32", "base32hex", "base16", "base2msbf", "base2lsbf", "z85"}

// shellBase64Output is BSD base64's -o (--output), which writes a file.
var shellBase64Output = []shellOptionRule{{short: 'o', long: "output", risk: shellDeletes, what: "writes its output to a file, replacing it"}}

// shellBase64Check lets base64 and its kin take only coreutils' options,
// none of which writes; BSD's -o writes a file, and any other option may
// be another system's.
func shellBase64Check(c *shellCall) {
	spec := shellGetopt{value: "w", flags: "di", long: []string{"wrap"}, known: shellBase64Long}
	c.scan(spec, func(o shellOption) { c.refuseOption(o, shellBase64Output) })
}

// shellSumFromFile is -c (--check), with which cksum and the sha*sum read
// the names of the files to check from a file.
var shellSumFromFile = []shellOptionRule{{short: 'c', long: "check", risk: shellOther, what: "reads the names of the files to check from a file"}}

// shellSumCheck refuses shellSumFromFile.
func shellSumCheck(c *shellCall) {
	c.scan(shellGetopt{value: "al", long: []string{"algorithm", "length"}}, func(o shellOption) { c.refuseOption(o, shellSumFromFile) })
}

// shellTestCheck refuses test -v and -R (is a variable set; is it a name
// reference) of an array element, x[…], or of a glob, which may expand
// to one: bash evaluates an element's subscript as arithmetic, which
// runs the $(…) or `…` in it even when the word was quoted.
func shellTestCheck(c *shellCall) {
	named := slices.ContainsFunc(c.args, func(w shellWord) bool { return w.value == "-v" || w.value == "-R" })
	for _, w := range c.args {
		if named && (w.glob || strings.Contains(w.value, "[") && w.value != "[") {
			c.refuse(c.base+" -v "+w.show()+" may name an array element, whose subscript bash runs as code", shellRunsCode,
				"may run the code in an array subscript", c.show(c.args...))
		}
	}
}
