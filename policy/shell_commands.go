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
	// with a check also refuses a glob that could expand to an option.
	check func(c *shellCall)
	// contents means the command shows what it reads of the files it is
	// given, their text or something made of it (cat, grep, base64,
	// sha256sum: a checksum gives a short password away), so a glob among
	// its arguments that could match a credential-shaped name asks; ls,
	// stat and wc show names, metadata and counts.
	contents bool
}

// shellSafeCommands are the commands that run without asking: the seed's
// eleven (ls cat head tail grep wc find pytest echo pwd true) and what a
// careful reviewer adds. Left out on purpose: cd (CDPATH, "cd" alone and
// "cd -" leave the workspace, and it is what models use to leave it), awk
// (system() and print > file), xargs and env (they run other commands),
// less and more (pagers wait for a terminal), tee, printf -v, and
// git grep (-O opens a pager program).
var shellSafeCommands = []shellCommand{
	{name: "ls", reason: "lists directory entries; no option writes a file or runs a program"},
	{name: "cat", reason: "prints files", contents: true},
	{name: "head", reason: "prints the first lines of files; no option writes or waits", contents: true},
	{name: "tail", reason: "prints the last lines of files; following a file never ends, so -f, -F and --follow ask",
		check: shellTailCheck, contents: true},
	{name: "grep", reason: "searches text; even -r only reads below the paths it is given, and no option writes or runs a program", contents: true},
	{name: "wc", reason: "counts lines, words and bytes; --files0-from asks, since it takes the file names from a file this check cannot see",
		check: shellRefuseOptions(shellGetopt{}, shellFilesFrom)},
	{name: "find", reason: "lists files; the actions that delete, write or run (-delete, -exec, -execdir, -ok, -okdir, -fprint, -fprint0, -fprintf, -fls) ask, and so does -files0-from",
		check: shellFindCheck},
	{name: "pytest", reason: "runs the workspace's tests: code the model may have written, contained by the sandbox; only the options pytest lists that read, select and print pass (see shellPytestOptions), and not those that import by name, load other configuration, write, delete or reach the network",
		check: shellPytestCheck, contents: true},
	{name: "py.test", reason: "is pytest, by its old name", check: shellPytestCheck, contents: true},
	{name: "pytest-3", reason: "is pytest, as Debian names it", check: shellPytestCheck, contents: true},
	{name: "py.test-3", reason: "is pytest, as Debian names it", check: shellPytestCheck, contents: true},
	{name: "echo", reason: "prints its arguments"},
	{name: "pwd", reason: "prints the working directory"},
	{name: "true", reason: "does nothing"},
	{name: "false", reason: "does nothing and fails"},
	{name: "test", reason: "tests strings and file attributes; prints and writes nothing"},
	{name: "[", reason: "is test"},
	{name: "sed", reason: "prints an edited stream; only scripts this check reads as GNU sed does and that only select, print and substitute pass: -i, -f, and the w, W, r, R and e commands and s///w and s///e ask",
		check: shellSedCheck, contents: true},
	{name: "stat", reason: "prints file metadata"},
	{name: "sort", reason: "sorts lines; -o writes a file, -T writes temporary files elsewhere, --compress-program runs a program, --files0-from reads names from a file: those ask",
		check: shellRefuseOptions(shellGetopt{value: "kotST"},
			shellOptionRule{short: 'o', long: "output", risk: shellDeletes, what: "writes its output to a file, replacing it"},
			shellOptionRule{short: 'T', long: "temporary-directory", risk: shellWrites, what: "writes temporary files in another directory"},
			shellOptionRule{long: "compress-program", risk: shellRunsCode, what: "runs a program to compress temporary files"},
			shellFilesFrom), contents: true},
	{name: "uniq", reason: "drops repeated lines; its second file operand is an OUTPUT file, so two operands ask, and so does a glob that could expand to two",
		check: shellUniqCheck, contents: true},
	{name: "cut", reason: "prints selected fields of each line; it has no option that writes", contents: true},
	{name: "tr", reason: "translates its input; it opens no file at all"},
	{name: "diff", reason: "compares files and prints the differences; no option of GNU diff writes, and the one program it may start is pr, for -l (sdiff and diff3 take programs and outputs, and are not listed)",
		contents: true},
	{name: "file", reason: "names the type of files; -C writes a compiled magic file, -f reads names from a file and -z and -Z may run decompressors, so they ask; every file of an -m list is checked as a path",
		check: shellFileCheck, contents: true},
	{name: "rg", reason: "searches text like grep; --pre and --pre-glob run a program on every file, -z runs decompressors, --hostname-bin runs a program: those ask",
		check: shellRefuseOptions(shellGetopt{value: "ABCdefgjmMrtTE"},
			shellOptionRule{long: "pre", risk: shellRunsCode, what: "runs a program on every file it searches"},
			shellOptionRule{long: "pre-glob", risk: shellRunsCode, what: "runs a program on every file it searches"},
			shellOptionRule{short: 'z', long: "search-zip", risk: shellRunsCode, what: "runs decompression programs"},
			shellOptionRule{long: "hostname-bin", risk: shellRunsCode, what: "runs a program to find the host name"}), contents: true},
	// tree reads an option's value from the next word and goes on with
	// the cluster, so every letter of a cluster is checked.
	{name: "tree", reason: "draws the directory tree; -o writes it to a file and -R writes 00Tree.html in every directory, so they ask",
		check: shellRefuseOptions(shellGetopt{},
			shellOptionRule{short: 'o', risk: shellDeletes, what: "writes its listing to a file, replacing it"},
			shellOptionRule{short: 'R', risk: shellWrites, what: "writes 00Tree.html in every directory"})},
	{name: "du", reason: "sums disk usage; --files0-from asks",
		check: shellRefuseOptions(shellGetopt{value: "BdXt"}, shellFilesFrom)},
	{name: "basename", reason: "prints a name without its directory"},
	{name: "dirname", reason: "prints the directory of a name"},
	// Output is captured, never a terminal, so git starts no pager and
	// --no-pager is not needed. status and diff may refresh .git/index, a
	// write git makes on its own. What a word check cannot see: the
	// workspace's own .git/config and .gitattributes may name programs
	// (core.fsmonitor on status, diff.external on diff, textconv drivers
	// on diff, log -p, show) that git runs as it reads; they change only
	// through an approved write and run inside the sandbox, like the test
	// code pytest runs. Nor can it see what history holds: git log -p and
	// git show print a credential file someone committed. ls-files and
	// blame ask because the git tool's own allowlist, which this check
	// reuses, does not hold them.
	{name: "git", reason: "read-only verbs only (status, log, diff, show, rev-parse, branch listing), and only as the git tool's rules allow them; --output, --textconv, --show-signature and %G formats (which run gpg) ask, and so do a credential-shaped path in a revision (HEAD:id_rsa, :.env) and a pathspec with a glob, which git matches against every path",
		check: shellGitCheck},
}

// shellSafeIndex finds a listed command by name. It is filled by init:
// the checks judge commands they run (find -exec), so the list refers to
// itself.
var shellSafeIndex = make(map[string]*shellCommand)

func init() {
	for i := range shellSafeCommands {
		shellSafeIndex[shellSafeCommands[i].name] = &shellSafeCommands[i]
	}
}

// shellLookup finds the listed command that name with args runs, and the
// arguments it receives: python -m pytest and python3 -m pytest are
// pytest.
func shellLookup(name string, args []shellWord) (*shellCommand, []shellWord) {
	if (name == "python" || name == "python3") && len(args) >= 2 && args[0].value == "-m" && args[1].value == "pytest" {
		return shellSafeIndex["pytest"], args[2:]
	}
	return shellSafeIndex[name], args
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
			o := shellOption{name: "--" + name, value: value, text: w.show(), at: i, unknown: !known && spec.known != nil}
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
// refused as well.
func (r shellOptionRule) matches(o shellOption) bool {
	if o.long() {
		name := o.name[2:]
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
func (c *shellCall) refuseOption(o shellOption, rules []shellOptionRule) {
	for _, r := range rules {
		if r.matches(o) {
			c.refuse(fmt.Sprintf("%s %s %s", c.base, o.name, r.what), r.risk, r.what, c.base+" "+o.text)
			return
		}
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
			c.refuse("uniq "+o.name+" is an option this check does not know", shellOther,
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
			c.refuse("sed "+o.name+" edits files in place", shellWrites, "edits files in place", c.base+" "+o.text)
		case o.name == "-f" || o.name == "--file":
			c.refuse("sed "+o.name+" reads its script from a file", shellOther, "runs a sed script from a file", c.base+" "+o.text)
		case o.name == "-l" || slices.Contains(shellSedLong, o.name) || !o.long() && strings.Contains(shellSedFlags, o.name[1:]):
		default:
			c.refuse("sed "+o.name+" is an option this check does not know", shellOther,
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

// shellGitReadVerbs are the git verbs that only read. branch is read-only
// only when listing, which shellGitBranch checks.
var shellGitReadVerbs = []string{"status", "log", "diff", "show", "rev-parse", "branch"}

// shellGitReadRules are options of the read verbs that write or run.
var shellGitReadRules = []shellOptionRule{
	{long: "output", risk: shellDeletes, what: "writes its output to a file, replacing it"},
	{long: "textconv", risk: shellRunsCode, what: "runs the conversion programs the configuration names"},
	{long: "show-signature", risk: shellRunsCode, what: "runs gpg to check signatures"},
}

// shellGitCheck lets git run without asking only when the git tool's own
// rules ([CheckGit]) allow the command and its verb only reads.
func shellGitCheck(c *shellCall) {
	argv := make([]string, 0, len(c.args)+1)
	argv = append(argv, "git")
	for _, w := range c.args {
		argv = append(argv, w.value)
	}
	verdict, err := CheckGit(argv)
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
	if !slices.Contains(shellGitReadVerbs, sub) || sub == "branch" && !shellGitBranchLists(rest) {
		c.refuse("git "+sub+" with these arguments does more than read", shellGitRisk(verdict), verdict.Note, how)
		return
	}
	read := &shellCall{a: c.a, base: how, args: rest}
	read.scan(shellGetopt{}, func(o shellOption) { read.refuseOption(o, shellGitReadRules) })
	for _, w := range rest {
		if strings.Contains(w.value, "%G") {
			read.refuse("git "+sub+" with a %G format runs gpg to check signatures", shellRunsCode,
				"runs gpg to check signatures", read.show(w))
		}
		if !strings.HasPrefix(w.value, "-") {
			read.gitPath(sub, w)
		}
	}
}

// gitPath refuses a word of a read verb that may reach a credential-shaped
// file through git rather than the shell: a path in a revision (HEAD:id_rsa,
// :id_rsa for the index, :0:.env for a stage) or in a pathspec's magic
// (:(icase)ID_RSA), and, for the verbs that take pathspecs, a glob, which
// git matches against every path in any directory (its * crosses "/" and
// matches dot files), where the deny list cannot follow it.
func (c *shellCall) gitPath(sub string, w shellWord) {
	if sub != "branch" && sub != "rev-parse" && strings.ContainsAny(w.value, "*?[") {
		c.refuse("git "+sub+" matches the pathspec "+w.show()+" against every path, and it could reach a credential-shaped file",
			shellSecrets, "may read a credential-shaped file through a pathspec", c.show(w))
	}
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
	case slices.Contains([]string{"rm", "restore", "checkout", "reset"}, v.Subcommand),
		strings.Contains(v.Note, "delet"), strings.Contains(v.Note, "discard"), strings.Contains(v.Note, "throws away"):
		return shellDeletes
	}
	return shellWrites
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
		{short: 'C', long: "compile", risk: shellWrites, what: "writes a compiled magic file"},
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
