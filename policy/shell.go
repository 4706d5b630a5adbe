package policy

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Verdict is the policy's decision on one shell command.
type Verdict struct {
	// Safe means the command only reads or runs the tests inside the
	// workspace, so it runs without asking.
	Safe bool
	// Reasons says, one rule per entry, why the command asks; empty when
	// Safe. It is written for the model and the logs.
	Reasons []string
	// Note is the one line the owner reads beside the approval buttons:
	// the level, then what the command deletes, where it leaves the
	// workspace, whether it reaches the network and what it runs, each with
	// the words of the command that do it. Empty when Safe.
	Note string
	// Level is how closely the owner should look.
	Level RiskLevel
	// Network means some part of the command reaches the network.
	Network bool
	// MayDelete means the policy cannot say that the command deletes and
	// overwrites nothing: some part of it deletes or overwrites files, or
	// may (cp onto a name that may exist, rsync, tar x, sed -i, a >
	// redirect), or runs a program or uses an option or a script this
	// check does not know. The note says which. Such a command never
	// becomes a rule ([RuleFor]): the one decision of what deletes is
	// this field's, made from the same clauses as the note.
	MayDelete bool
	// Commands are the command words of the simple commands the shell
	// would run, in order, including those inside $(…) and ( … ).
	Commands []string
}

// RiskLevel says how closely the owner should look at a command that asks.
type RiskLevel string

// The levels. Deleting or overwriting, leaving the workspace, the network,
// privilege, credential-shaped files and code the command line does not
// show ($(…), sh -c, eval, xargs, find -exec) are RiskLookClosely;
// writing inside the workspace and running the workspace's own programs
// (python todo.py) are RiskRoutine, and the note still says so.
const (
	RiskRoutine     RiskLevel = "routine"
	RiskLookClosely RiskLevel = "look closely"
)

// shellNoteLimit caps the note in bytes: it must fit one line of a chat
// message.
const shellNoteLimit = 200

// shellNestLimit bounds how deep command strings run by commands (sh -c,
// eval, su -c, watch) are read for the note.
const shellNestLimit = 3

// shellParsers reuses parsers, which are not safe for concurrent use but
// may parse again once done.
var shellParsers = sync.Pool{New: func() any { return syntax.NewParser() }}

// Classify decides whether command may run without asking, for a shell
// whose working directory is workspace (an absolute path; "" when
// unknown, and then no absolute path counts as inside it).
//
// The command is parsed as the shell parses it (mvdan.cc/sh/v3/syntax,
// bash dialect). It is Safe only when:
//   - every simple command is on the read/test list (see
//     shellSafeCommands, each with the reason it is there and the uses of
//     it that still ask), python -m pytest and python3 -m pytest counting
//     as pytest, and the command word is written plainly, so that l\s and
//     'ls' are ls but ls followed by an invisible character is not;
//   - commands are joined only by |, &&, || and ;, on one line (a line
//     break in a quoted word or after a backslash is part of a word);
//   - the only redirects send stdout or stderr to /dev/null or to each
//     other (2>&1, 2>/dev/null, >/dev/null, 1>&2): they discard or merge
//     output and write nothing, or read standard input from a file named
//     plainly (sort < names.txt), which the path rules judge as they
//     judge an argument. &> asks: POSIX sh reads "ls &>x" as "ls &" and
//     ">x";
//   - nothing is expanded but file name globs: no $(…), backticks, <(…),
//     >(…), $x, ${x}, $((…)), $'…', no brace expansion ({a,b} builds words
//     this check would have to expand to see), no assignments (X=1 cmd),
//     no background &, no ( … ), { …; }, functions, if, for, while, case,
//     here-documents or here-strings;
//   - no argument, and no piece of one after "=" (--basetemp=/x) or glued
//     to a short option (-f/etc/x), is absolute (except /dev/null), starts
//     with ~, or contains "..", and none is named like a credential (see
//     [Denied]), except the words a listed command reads as code or a
//     pattern and never opens (a sed script, a grep pattern, pytest -k);
//   - a glob given to a command that shows what it reads (cat, grep,
//     head, base64, sha256sum; not ls or wc, which show names and sizes)
//     cannot match a credential-shaped name: each of its path components
//     is read as a pattern and met with the deny list's rules read as
//     patterns, so "cat i?_map.txt", "cat *oken" and "cat *" ask while
//     "cat *.py" does not;
//   - globs stay inside the workspace: they expand in the working
//     directory and cannot produce an absolute path, but one whose path
//     component starts with "." can match ".." (dash does), so it asks.
//     For a command whose options this check inspects, a glob that could
//     expand to an option (*.txt meeting a file named -o.txt) asks too;
//   - there are no control or invisible characters: the parser drops NUL
//     and CR bytes that the shell keeps.
//
// A comment is harmless, since the shell runs nothing after # on its line,
// except one ending in a backslash: the parser joins the next line into
// the comment while the shell runs it, so a command that joins lines with
// a backslash and holds a # asks.
//
// An absolute path inside the workspace still asks; workspace only makes
// the note call it routine rather than leaving.
//
// This is a check on the words of a command, not a sandbox: cat link
// follows a symbolic link wherever it points, grep -r and cat * read every
// file they reach, and pytest and git read the workspace's own code and
// configuration (conftest.py, .git/config) and may run it. The sandbox
// contains all of that. It also trusts PATH to hold only the system's
// directories: with the workspace on PATH, a script named ls would run.
//
// Anything else asks, with the reasons and a one-line note built from the
// parse. Classify never panics and is safe for concurrent use.
func Classify(command, workspace string) Verdict {
	a := &shellAnalysis{workspace: shellCleanWorkspace(workspace)}
	a.read(command)
	return a.verdict()
}

// shellCleanWorkspace returns workspace as a clean absolute path, or "".
func shellCleanWorkspace(workspace string) string {
	if !path.IsAbs(workspace) {
		return ""
	}
	return path.Clean(workspace)
}

// shellRisk is the kind of a note clause; the note lists clauses in this
// order.
type shellRisk int

const (
	shellUnclear   shellRisk = iota // cannot be read as the shell reads it
	shellDeletes                    // deletes or overwrites files
	shellLeaves                     // reaches outside the workspace
	shellSecrets                    // names a credential-shaped file
	shellNetwork                    // reaches the network
	shellPrivilege                  // acts as another user or on the system
	shellRunsCode                   // runs code the command line does not show
	shellWrites                     // writes inside the workspace, replacing nothing
	shellRuns                       // runs a workspace script or the project's own code
	shellUnknown                    // does what this check does not know: a program, option or script it does not read
	shellOther                      // anything else worth a word
)

// lookClosely reports whether a clause of this kind makes the whole
// command one to look at closely.
func (r shellRisk) lookClosely() bool { return r <= shellRunsCode }

// mayDelete reports whether a clause of this kind leaves the policy
// unable to say that the command deletes and overwrites nothing: it
// deletes or overwrites, or it does what this check does not know. A
// workspace script (python3 build.py) is the workspace's own code, run
// by its name: what it does is the script's, not the command line's.
func (r shellRisk) mayDelete() bool { return r == shellDeletes || r == shellUnknown }

// shellClause is one item of the note: what happens, and the words that
// do it.
type shellClause struct {
	risk shellRisk
	what string // "deletes todos.json"
	how  string // "rm -f"
}

// shellAnalysis collects what one command does while its syntax tree is
// walked.
type shellAnalysis struct {
	workspace string
	src       string // the text being walked, for quoting words as written
	depth     int    // how many command strings deep this analysis reads
	reasons   []string
	refused   map[string]bool // every reason found, kept or not
	clauses   []shellClause
	commands  []string
}

// shellReasonLimit caps the reasons a verdict lists; the first ones are
// enough to say why, and a huge command must not make a huge verdict.
const shellReasonLimit = 16

func (a *shellAnalysis) refuse(reason string) {
	if a.refused == nil {
		a.refused = make(map[string]bool)
	}
	if a.refused[reason] {
		return
	}
	a.refused[reason] = true
	if len(a.reasons) < shellReasonLimit {
		a.reasons = append(a.reasons, reason)
	}
}

func (a *shellAnalysis) note(risk shellRisk, what, how string) {
	a.clauses = append(a.clauses, shellClause{risk: risk, what: what, how: how})
}

// shellHidden reports characters the check refuses to read past: control
// characters other than tab and newline, and invisible format characters
// (zero-width spaces, direction overrides) that make a command read
// differently from what runs.
func shellHidden(r rune) bool {
	return (unicode.IsControl(r) && r != '\t' && r != '\n') || unicode.Is(unicode.Cf, r)
}

// read parses src and walks it.
func (a *shellAnalysis) read(src string) {
	if i := strings.IndexFunc(src, shellHidden); i >= 0 {
		r, _ := utf8.DecodeRuneInString(src[i:])
		a.refuse(fmt.Sprintf("contains the hidden character %U, which the parser and the shell may read differently", r))
		a.note(shellUnclear, fmt.Sprintf("contains the hidden character %U", r), "")
	}
	if strings.Contains(src, "\\\n") && strings.Contains(src, "#") {
		// The parser reads a comment that ends in a backslash as going on
		// to the next line; the shell ends it there and runs that line.
		a.refuse("joins lines with a backslash and holds a #, which the parser and the shell may read differently")
		a.note(shellUnclear, "may hide a line behind a comment ending in a backslash", "")
	}
	if strings.TrimSpace(src) == "" {
		a.refuse("the command is empty")
		return
	}
	parser := shellParsers.Get().(*syntax.Parser)
	file, err := parser.Parse(strings.NewReader(src), "")
	shellParsers.Put(parser)
	if err != nil {
		a.refuse("the shell parser rejects it: " + shellEscape(err.Error()))
		a.note(shellUnclear, "cannot be parsed", shellShow(err.Error()))
		return
	}
	a.src = src
	if len(file.Stmts) == 0 {
		a.refuse("the command runs nothing")
	}
	for i, stmt := range file.Stmts {
		if i > 0 && !file.Stmts[i-1].Semicolon.IsValid() {
			a.refuse("commands stand on separate lines; only |, &&, || and ; may join them")
		}
		a.stmt(stmt)
	}
}

// readNested reads a command string that a command runs (sh -c, eval) for
// the note; its own reasons and commands are not the outer command's.
func (a *shellAnalysis) readNested(src string) {
	if a.depth >= shellNestLimit {
		a.note(shellRunsCode, "nests command strings too deep to read", "")
		return
	}
	inner := &shellAnalysis{workspace: a.workspace, depth: a.depth + 1}
	inner.read(src)
	a.clauses = append(a.clauses, inner.clauses...)
}

// text returns the source of node as written.
func (a *shellAnalysis) text(node syntax.Node) string {
	start, end := node.Pos().Offset(), node.End().Offset()
	if start > end || end > uint(len(a.src)) {
		return ""
	}
	return a.src[start:end]
}

func (a *shellAnalysis) stmt(stmt *syntax.Stmt) {
	if stmt.Negated {
		a.refuse("negates a command (!)")
	}
	if stmt.Background {
		a.refuse("runs a command in the background (&)")
		a.note(shellOther, "runs in the background", "&")
	}
	if stmt.Coprocess || stmt.Disown {
		a.refuse("uses a shell-specific job operator")
	}
	for _, r := range stmt.Redirs {
		a.redirect(r)
	}
	switch cmd := stmt.Cmd.(type) {
	case nil:
		a.refuse("a redirect stands without a command")
	case *syntax.CallExpr:
		a.call(cmd)
	case *syntax.BinaryCmd:
		if cmd.Op != syntax.AndStmt && cmd.Op != syntax.OrStmt && cmd.Op != syntax.Pipe {
			a.refuse("joins commands with " + cmd.Op.String() + "; only |, &&, || and ; may join them")
		}
		a.stmt(cmd.X)
		a.stmt(cmd.Y)
	default:
		a.refuse(shellCompoundReason(cmd))
		a.walk(cmd)
	}
}

// shellCompoundReason names a compound command for the reasons.
func shellCompoundReason(cmd syntax.Command) string {
	switch cmd := cmd.(type) {
	case *syntax.Subshell:
		return "runs commands in a subshell ( … )"
	case *syntax.Block:
		return "groups commands in { … }"
	case *syntax.FuncDecl:
		return "defines a function"
	case *syntax.DeclClause:
		return "sets variables (" + cmd.Variant.Value + ")"
	case *syntax.TestClause:
		return "uses [[ … ]]"
	case *syntax.ArithmCmd:
		return "uses (( … ))"
	}
	return "uses shell control flow or keywords (if, for, while, case, time, let, …)"
}

// walk visits what a compound command contains: statements, words with
// their expansions, and assignments.
func (a *shellAnalysis) walk(node syntax.Node) {
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			a.stmt(n)
			return false
		case *syntax.Word:
			a.word(n)
			return false
		case *syntax.Assign:
			a.assign(n)
			return false
		}
		return true
	})
}

// shellSteeringVariables change which programs run or what they load.
var shellSteeringVariables = []string{
	"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME",
	"BASH_ENV", "ENV", "IFS", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "GIT_CONFIG_GLOBAL",
	"GIT_CONFIG_SYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_EXEC_PATH", "GIT_SSH_COMMAND",
	"GIT_EXTERNAL_DIFF", "PAGER", "GIT_PAGER", "EDITOR", "VISUAL", "HOME", "PROMPT_COMMAND",
}

func (a *shellAnalysis) assign(as *syntax.Assign) {
	a.refuse("sets variables (" + shellShow(a.text(as)) + ")")
	if as.Value != nil {
		a.word(as.Value)
	}
	if as.Array != nil {
		a.walk(as.Array)
	}
	if as.Name == nil {
		return
	}
	a.noteVariable(as.Name.Value, shellShow(a.text(as)))
}

// noteVariable notes setting a variable, by name.
func (a *shellAnalysis) noteVariable(name, how string) {
	if gitUnmasks(name) {
		a.note(shellSecrets, "sets "+name+", which makes git show what credential-shaped files held, past the sandbox's masks", how)
		return
	}
	if slices.Contains(shellSteeringVariables, name) {
		a.note(shellRunsCode, "sets "+name+", which changes what programs run or load", how)
		return
	}
	a.note(shellOther, "sets "+name, how)
}

func (a *shellAnalysis) call(call *syntax.CallExpr) {
	for _, as := range call.Assigns {
		a.assign(as)
	}
	if len(call.Args) == 0 {
		return
	}
	words := make([]shellWord, len(call.Args))
	words[0] = a.word(call.Args[0])
	if words[0].literal {
		a.commands = append(a.commands, shellShow(words[0].value))
	} else {
		a.commands = append(a.commands, shellShow(words[0].text))
	}
	for i, w := range call.Args[1:] {
		words[i+1] = a.word(w)
	}
	a.simple(words)
}

// simple judges one simple command given as resolved words: the command
// word and its arguments.
func (a *shellAnalysis) simple(words []shellWord) {
	c := &shellCall{a: a, name: words[0], base: words[0].value, args: words[1:]}
	if !c.name.literal {
		a.refuse("the command name is built by an expansion (" + c.name.show() + ")")
		a.note(shellRunsCode, "runs a command whose name is computed", c.name.show())
		c.base = c.name.show()
		c.checkArgs()
		return
	}
	if strings.Contains(c.base, "/") {
		a.refuse("runs a program by its path (" + c.name.show() + ")")
		c.checkArgs()
		c.program()
		return
	}
	entry, args := shellLookup(c.base, c.args)
	if entry == nil {
		a.refuse(c.name.show() + " is not a read or test command")
		c.checkArgs()
		c.describe()
		return
	}
	c.base, c.args = entry.name, args
	if entry.check != nil {
		for _, w := range c.args {
			if w.glob && (w.globAtStart || strings.HasPrefix(w.value, "-")) && !entry.optionGlobsHarmless {
				c.refuse(fmt.Sprintf("the glob %s could expand to an option of %s", w.show(), c.base),
					shellOther, "expands a glob that could turn into an option", c.show(w))
			}
		}
		entry.check(c)
	}
	c.checkArgs()
}

// shellWord is one word of a command as the program will receive it.
type shellWord struct {
	value string // after quote removal; complete only when literal
	text  string // as written, for notes
	// literal means no expansion but globbing happens: value is exactly
	// what the program receives unless glob matches files.
	literal     bool
	glob        bool // holds an unquoted *, ? or [
	globAtStart bool // starts with an unquoted *, ? or [
	dotGlob     bool // a glob in a path component that starts with "." (see shellDotGlob)
	brace       bool // holds an unquoted brace expansion
	// code marks a word a listed command reads as code or a pattern, not
	// as a path (a sed script, whose commands that name files all ask; a
	// grep pattern; pytest -k's expression), so the path and credential
	// rules pass it by.
	code bool
	// revision marks a word git reads as a revision or a path: ".." in it
	// asks only as a whole path component, since HEAD~3..HEAD and
	// main...topic are ranges.
	revision bool
}

// show returns the word as written, made safe to print on one line.
func (w shellWord) show() string { return shellShow(w.text) }

// word resolves w as the shell would before running the command, noting
// every expansion.
func (a *shellAnalysis) word(w *syntax.Word) shellWord {
	if len(w.Parts) == 0 {
		return shellWord{literal: true}
	}
	sw := shellWord{text: a.text(w), literal: true}
	if len(w.Parts) == 1 {
		if lit, ok := w.Parts[0].(*syntax.Lit); ok && !strings.ContainsAny(lit.Value, "\\*?[{") {
			sw.value = lit.Value
			return sw
		}
	}
	var b strings.Builder
	braces := false
	var statuses []int // where $? stands in the value, as shellStatusValue
	status := func(part syntax.WordPart) bool {
		if !shellExitStatus(part) {
			return false
		}
		statuses = append(statuses, b.Len())
		b.WriteString(shellStatusValue)
		return true
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			shellUnquoted(&b, &sw, p.Value)
			braces = braces || strings.Contains(p.Value, "{")
		case *syntax.SglQuoted:
			if p.Dollar {
				sw.literal = false
				a.refuse("uses $'…' quoting, which POSIX sh reads differently")
				continue
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				sw.literal = false
				a.refuse("uses $\"…\" quoting, which POSIX sh reads differently")
			}
			for _, inner := range p.Parts {
				if lit, ok := inner.(*syntax.Lit); ok {
					shellDoubleQuoted(&b, lit.Value)
					continue
				}
				if !status(inner) {
					sw.literal = false
					a.expansion(inner)
				}
			}
		default:
			if !status(part) {
				sw.literal = false
				a.expansion(part)
			}
		}
	}
	if len(statuses) > 0 && !shellStatusBeside(b.String(), statuses) {
		sw.literal = false
		a.refuse("expands $? beside text that could make a path, an option or a name of it (" + sw.show() + ")")
		a.note(shellOther, "expands $?", sw.show())
	}
	if braces {
		copied := *w
		sw.brace = syntax.SplitBraces(&copied) && slices.ContainsFunc(copied.Parts, func(p syntax.WordPart) bool {
			_, ok := p.(*syntax.BraceExp)
			return ok
		})
	}
	sw.value = b.String()
	sw.dotGlob = sw.glob && shellDotGlob(sw.value)
	return sw
}

// shellStatusValue stands for $? in a word's value: the last command's
// status, a number from 0 to 255.
const shellStatusValue = "0"

// shellExitStatus reports whether part is $? or ${?}, as plain as that:
// the status of the last command, which holds only digits, never a path,
// an option or code.
func shellExitStatus(part syntax.WordPart) bool {
	p, ok := part.(*syntax.ParamExp)
	return ok && p.Param != nil && p.Param.Value == "?" && !p.Excl && !p.Length && !p.Width &&
		p.Index == nil && p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// shellStatusBeside reports whether the text beside the $? in a word's
// value (standing at statuses) is only letters, digits, blanks and :,=,
// so that no digits $? brings could make a path, an option or a
// credential-shaped name of it (key.p$? is key.p12 when the last command
// failed with 12, and -$? an option): each rule a digit can complete
// needs a ".", "/", "-" or "~" beside it.
func shellStatusBeside(value string, statuses []int) bool {
	var rest strings.Builder
	from := 0
	for _, at := range statuses {
		rest.WriteString(value[from:at])
		from = at + len(shellStatusValue)
	}
	rest.WriteString(value[from:])
	return strings.Trim(rest.String(), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 :,=") == ""
}

// shellDotGlob reports whether a globbing word has a path component that
// starts with "." and holds a glob character: a pattern such as .* can
// match "..". Quoted glob characters count too, which only errs towards
// asking.
func shellDotGlob(word string) bool {
	for component := range strings.SplitSeq(word, "/") {
		if strings.HasPrefix(component, ".") && strings.ContainsAny(component, "*?[") {
			return true
		}
	}
	return false
}

// shellUnquoted appends an unquoted literal: a backslash escapes the next
// byte (the parser has already removed escaped line breaks).
func shellUnquoted(b *strings.Builder, sw *shellWord, lit string) {
	for i := 0; i < len(lit); i++ {
		ch := lit[i]
		switch ch {
		case '\\':
			if i+1 < len(lit) {
				i++
				ch = lit[i]
			}
		case '*', '?', '[':
			sw.glob = true
			sw.globAtStart = sw.globAtStart || b.Len() == 0
		}
		b.WriteByte(ch)
	}
}

// shellDoubleQuoted appends a literal from inside double quotes, where a
// backslash escapes only $, `, ", \ and a line break.
func shellDoubleQuoted(b *strings.Builder, lit string) {
	for i := 0; i < len(lit); i++ {
		if lit[i] == '\\' && i+1 < len(lit) && strings.IndexByte("$`\"\\\n", lit[i+1]) >= 0 {
			i++
		}
		b.WriteByte(lit[i])
	}
}

// shellOutsideVariables hold paths outside the workspace.
var shellOutsideVariables = []string{"HOME", "OLDPWD", "TMPDIR", "TMP"}

// expansion notes a word part the shell expands at run time.
func (a *shellAnalysis) expansion(part syntax.WordPart) {
	text := shellShow(a.text(part))
	switch p := part.(type) {
	case *syntax.ParamExp:
		a.refuse("expands a variable (" + text + ")")
		if p.Param != nil && slices.Contains(shellOutsideVariables, p.Param.Value) {
			a.note(shellLeaves, "leaves the workspace", text)
		} else {
			a.note(shellOther, "expands "+text, "")
		}
		a.walk(p)
	case *syntax.CmdSubst:
		form := "$(…)"
		if p.Backquotes {
			form = "`…`"
		}
		a.refuse("runs a command substitution " + form)
		a.note(shellRunsCode, "builds words from the output of "+shellShow(a.stmtsText(p.Stmts)), form)
		for _, stmt := range p.Stmts {
			a.stmt(stmt)
		}
	case *syntax.ProcSubst:
		a.refuse("runs a process substitution " + p.Op.String() + "…)")
		a.note(shellRunsCode, "runs "+shellShow(a.stmtsText(p.Stmts))+" as a file", p.Op.String()+"…)")
		for _, stmt := range p.Stmts {
			a.stmt(stmt)
		}
	case *syntax.ArithmExp:
		a.refuse("expands arithmetic (" + text + ")")
		a.note(shellOther, "computes "+text, "")
		a.walk(p)
	default:
		a.refuse("uses an extended glob or expansion (" + text + ")")
	}
}

// stmtsText returns the source of a list of statements.
func (a *shellAnalysis) stmtsText(stmts []*syntax.Stmt) string {
	if len(stmts) == 0 {
		return "nothing"
	}
	start, end := stmts[0].Pos().Offset(), stmts[len(stmts)-1].End().Offset()
	if start > end || end > uint(len(a.src)) {
		return ""
	}
	return a.src[start:end]
}

// redirect judges one redirect.
func (a *shellAnalysis) redirect(r *syntax.Redirect) {
	fd := ""
	if r.N != nil {
		fd = r.N.Value
	}
	target := a.word(r.Word)
	how := shellShow(fd + r.Op.String() + " " + target.text)
	std := fd == "" || fd == "1" || fd == "2"
	discards := target.literal && target.value == "/dev/null"
	if !std {
		a.refuse("redirects file descriptor " + shellShow(fd) + " (" + how + ")")
		if discards {
			return
		}
	}
	switch r.Op {
	case syntax.DplOut:
		if std && target.literal && (target.value == "1" || target.value == "2") {
			return
		}
		if target.literal && (target.value == "-" || shellDigits(target.value)) {
			a.refuse("redirects another file descriptor (" + how + ")")
			return
		}
		a.refuse("writes output to a file (" + how + ")")
		a.note(shellDeletes, "overwrites "+target.show(), how)
	case syntax.RdrOut, syntax.RdrClob:
		if discards {
			return
		}
		a.refuse("writes output to a file (" + how + ")")
		a.note(shellDeletes, "overwrites "+target.show(), how)
	case syntax.AppOut:
		if discards {
			return
		}
		a.refuse("appends output to a file (" + how + ")")
		a.note(shellWrites, "appends to "+target.show(), how)
	case syntax.RdrAll, syntax.AppAll:
		a.refuse("uses &>, which POSIX sh reads as & and then > (" + how + ")")
		if target.value != "/dev/null" {
			a.note(shellDeletes, "overwrites "+target.show(), how)
		}
	case syntax.RdrIn:
		if fd == "" && target.literal && target.value != "" && !strings.ContainsAny(target.value, "*?[{") {
			// Reading a file as input is reading it as an argument:
			// the path rules decide, as for a command that shows it.
			// A target with glob or brace characters asks, even quoted:
			// bash globs an unquoted one, and nobody needs one.
			(&shellCall{a: a, base: "<"}).checkArg(target)
			return
		}
		a.refuse("reads input from a file other than a plain path (" + how + ")")
		a.note(shellOther, "reads "+target.show(), how)
	case syntax.RdrInOut:
		a.refuse("opens a file for writing (" + how + ")")
		a.note(shellDeletes, "opens "+target.show()+" for writing over it", how)
	case syntax.Hdoc, syntax.DashHdoc:
		a.refuse("feeds a here-document")
		a.note(shellOther, "feeds a here-document", r.Op.String())
		if r.Hdoc != nil {
			a.word(r.Hdoc)
		}
		return
	case syntax.WordHdoc:
		a.refuse("feeds a here-string (<<<)")
		return
	default:
		a.refuse("uses a redirect this check does not allow (" + how + ")")
	}
	if target.literal {
		(&shellCall{a: a, base: fd + r.Op.String()}).checkArg(target)
	}
}

func shellDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// shellCall is one simple command being judged.
type shellCall struct {
	a    *shellAnalysis
	name shellWord   // the command word as written
	base string      // the program it names, for notes: "rm", "pytest"
	args []shellWord // its arguments
}

// refuse records why the command asks and, when what is set, a clause of
// the note.
func (c *shellCall) refuse(reason string, risk shellRisk, what, how string) {
	c.a.refuse(reason)
	if what != "" {
		c.a.note(risk, what, how)
	}
}

func (c *shellCall) note(risk shellRisk, what, how string) { c.a.note(risk, what, how) }

// show returns the program and the given words as written, for notes.
func (c *shellCall) show(words ...shellWord) string {
	var b strings.Builder
	b.WriteString(shellShow(c.base))
	for _, w := range words {
		b.WriteByte(' ')
		b.WriteString(w.show())
	}
	return b.String()
}

// checkArgs applies the argument rules every command obeys.
func (c *shellCall) checkArgs() {
	for _, w := range c.args {
		if w.literal {
			c.checkArg(w)
		}
	}
}

// checkArg refuses an argument that leaves the workspace, names a
// credential, or expands in ways the check cannot follow. A word read as
// code or a pattern is no path, but it is still expanded by the shell.
func (c *shellCall) checkArg(w shellWord) {
	how := c.show(w)
	if !w.code {
		c.checkPath(w, how)
	}
	if w.dotGlob {
		c.a.refuse("the glob " + w.show() + " can match ..")
		c.note(shellLeaves, "may leave the workspace through a glob matching ..", how)
	}
	if w.brace {
		c.a.refuse("uses brace expansion (" + w.show() + ")")
		c.note(shellOther, "expands braces into several words", how)
	}
}

// checkPath refuses a word, taken as a path or a list of pieces that may
// be paths, that leaves the workspace or names a credential, or a glob
// that could match one in a command that shows what it reads.
func (c *shellCall) checkPath(w shellWord, how string) {
	leaves := false
	shellEachPiece(w.value, func(piece string) {
		switch {
		case strings.HasPrefix(piece, "/") && piece != "/dev/null":
			c.a.refuse("an argument is an absolute path (" + how + ")")
			if c.a.inWorkspace(piece) {
				c.note(shellOther, "names a workspace path by its absolute path", how)
			} else {
				c.note(shellLeaves, "leaves the workspace", how)
				leaves = true
			}
		case strings.HasPrefix(piece, "~") || strings.Contains(piece, ":~"):
			c.a.refuse("an argument starts with ~, the home directory (" + how + ")")
			c.note(shellLeaves, "leaves the workspace", how)
			leaves = true
		case shellEscapes(piece):
			c.note(shellLeaves, "leaves the workspace", how)
			leaves = true
		}
		if reason, denied := Denied(piece); denied {
			c.a.refuse("an argument names a credential-shaped file: " + reason)
			c.note(shellSecrets, "touches a credential-shaped file", how)
		}
	})
	if strings.Contains(w.value, "..") && (!w.revision || shellClimbs(w.value)) {
		c.a.refuse("an argument contains .. (" + how + ")")
		if !leaves {
			c.note(shellOther, "uses .. in a path", how)
		}
	}
}

// shellEachPiece calls fn with the word and every part of it that a
// program may take as a path: each piece after "=" (--basetemp=/x) and a
// value glued to a short option (-f/etc/x, -o~/x).
func shellEachPiece(word string, fn func(piece string)) {
	for piece := range strings.SplitSeq(word, "=") {
		fn(piece)
	}
	if len(word) > 2 && word[0] == '-' && word[1] != '-' {
		if at := strings.IndexAny(word, "/~"); at > 1 && shellAlnum(word[1:at]) {
			value, _, _ := strings.Cut(word[at:], "=")
			fn(value)
		}
	}
}

func shellAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// shellClimbs reports whether a path has ".." as a component.
func shellClimbs(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "..")
}

// shellEscapes reports whether a relative path climbs out of the
// directory it starts in.
func shellEscapes(p string) bool {
	if path.IsAbs(p) {
		return false
	}
	clean := path.Clean(p)
	return clean == ".." || strings.HasPrefix(clean, "../")
}

// inWorkspace reports whether the absolute path p lies in the workspace.
func (a *shellAnalysis) inWorkspace(p string) bool {
	if a.workspace == "" {
		return false
	}
	clean := path.Clean(p)
	return clean == a.workspace || strings.HasPrefix(clean, a.workspace+"/") || a.workspace == "/"
}

// verdict assembles the result.
func (a *shellAnalysis) verdict() Verdict {
	v := Verdict{Safe: len(a.reasons) == 0, Level: RiskRoutine, Commands: a.commands}
	if v.Safe {
		return v
	}
	v.Reasons = a.reasons
	for _, c := range a.clauses {
		v.Network = v.Network || c.risk == shellNetwork
		v.MayDelete = v.MayDelete || c.risk.mayDelete()
		if c.risk.lookClosely() {
			v.Level = RiskLookClosely
		}
	}
	v.Note = shellNote(v.Level, a.clauses, a.reasons)
	return v
}

// shellNote writes the one-line note: the level, then the clauses in
// order of risk, those that say the same thing merged ("leaves the
// workspace (cd /tmp; cat /etc/passwd)"), cut to shellNoteLimit bytes.
func shellNote(level RiskLevel, clauses []shellClause, reasons []string) string {
	if len(clauses) == 0 {
		clauses = []shellClause{{risk: shellOther, what: "asks because " + reasons[0]}}
	}
	slices.SortStableFunc(clauses, func(x, y shellClause) int { return int(x.risk) - int(y.risk) })
	type group struct {
		what string
		hows []string
	}
	var groups []group
	index := make(map[string]int)
	for _, c := range clauses {
		at, ok := index[c.what]
		if !ok {
			at = len(groups)
			index[c.what] = at
			groups = append(groups, group{what: c.what})
		}
		if c.how != "" && len(groups[at].hows) < shellListLimit && !slices.Contains(groups[at].hows, c.how) {
			groups[at].hows = append(groups[at].hows, c.how)
		}
	}
	note := string(level) + ": "
	for i, g := range groups {
		part := g.what
		if len(g.hows) > 0 {
			part += " (" + strings.Join(g.hows, "; ") + ")"
		}
		if i > 0 {
			part = "; " + part
		}
		if len(note)+len(part) > shellNoteLimit {
			return shellCut(note+part, shellNoteLimit)
		}
		note += part
	}
	return note
}

// shellCut shortens s to at most limit bytes, on a rune boundary, ending
// in "…".
func shellCut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// shellShowLimit caps one word in a note.
const shellShowLimit = 60

// shellShow makes s safe to print on one line of a note (see
// shellEscape) and cuts a long one.
func shellShow(s string) string {
	return shellCut(shellEscape(s), shellShowLimit)
}

// shellEscape quotes a string holding line breaks, control or invisible
// characters or invalid UTF-8, with those escaped.
func shellEscape(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) && r != ' ' || r == utf8.RuneError }) {
		return strconv.QuoteToGraphic(s)
	}
	return s
}
