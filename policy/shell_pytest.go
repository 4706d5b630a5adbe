package policy

import (
	"fmt"
	"strings"
)

// shellPytestValue says whether a pytest option takes a value.
type shellPytestValue int

const (
	pytestFlag     shellPytestValue = iota // takes none
	pytestValue                            // the rest of the word after "=" (or glued, for a short one), else the next word
	pytestOptional                         // only after "=": argparse's nargs="?" takes the next word only when it looks like no option, and this check does not guess
)

// shellPytestOption is one of pytest's options.
type shellPytestOption struct {
	value shellPytestValue
	// refuse is why the option asks; nil lets it run.
	refuse *shellOptionRule
	// code means the value is an expression (-k, -m), never a path.
	code bool
}

// pytestRefuse returns a refusal for the option table.
func pytestRefuse(risk shellRisk, what string) *shellOptionRule {
	return &shellOptionRule{risk: risk, what: what}
}

// The refusals the table shares, written as literals so that the linker
// lays them out (a call would run at init).
var (
	pytestPlugin   = &shellOptionRule{risk: shellRunsCode, what: "loads a plugin module by name"}
	pytestDebugger = &shellOptionRule{risk: shellRunsCode, what: "starts the debugger, which runs the Python it reads from its input"}
	pytestOverride = &shellOptionRule{risk: shellUnknown, what: "overrides ini settings, which can move the cache, logs and reports anywhere"}
	pytestConfig   = &shellOptionRule{risk: shellRunsCode, what: "loads its configuration from another file, which can add options and plugins"}
)

// shellPytestOptions are all the options `python3 -m pytest --help`
// lists in the sandbox image (pytest 7.2.1, with its cacheprovider and
// stepwise plugins), each as argparse defines it (allow_abbrev is off,
// so names match exactly), and whether it runs without asking. An
// option passes when it only selects, orders, reports or prints, or
// reads what the workspace holds (--lf reads the cache, --doctest-modules
// imports the workspace's modules as the tests do). It asks when it
// imports by name (-p, --pyargs, --pdbcls, a dotted -W category), loads
// other configuration or moves the root (-c, -o, --rootdir,
// --confcutdir), changes what is imported (--import-mode), starts the
// debugger on its input (--pdb, --trace), writes or deletes files
// (--basetemp, --junit-xml, --log-file, --debug, --cache-clear) or
// reaches the network (--pastebin). A few options of other pytest
// versions and of well-known plugins are listed to ask with a clear
// note; every other option asks as unknown.
var shellPytestOptions = lazy[map[string]shellPytestOption]{build: func() map[string]shellPytestOption {
	return map[string]shellPytestOption{
		// general
		"-k":                  {value: pytestValue, code: true},
		"-m":                  {value: pytestValue, code: true},
		"--markers":           {},
		"-x":                  {},
		"--exitfirst":         {},
		"--fixtures":          {},
		"--funcargs":          {},
		"--fixtures-per-test": {},
		"--pdb":               {refuse: pytestDebugger},
		"--pdbcls":            {value: pytestValue, refuse: pytestRefuse(shellRunsCode, "loads a debugger class by name")},
		"--trace":             {refuse: pytestDebugger},
		"--capture":           {value: pytestValue},
		"-s":                  {},
		"--runxfail":          {},
		// reporting
		"--durations":               {value: pytestValue},
		"--durations-min":           {value: pytestValue},
		"-v":                        {},
		"--verbose":                 {},
		"--no-header":               {},
		"--no-summary":              {},
		"-q":                        {},
		"--quiet":                   {},
		"--verbosity":               {value: pytestValue},
		"-r":                        {value: pytestValue},
		"--disable-warnings":        {},
		"--disable-pytest-warnings": {},
		"-l":                        {},
		"--showlocals":              {},
		"--no-showlocals":           {},
		"--tb":                      {value: pytestValue},
		"--show-capture":            {value: pytestValue},
		"--full-trace":              {},
		"--fulltrace":               {},
		"--color":                   {value: pytestValue},
		"--code-highlight":          {value: pytestValue},
		"--pastebin":                {value: pytestValue, refuse: pytestRefuse(shellNetwork, "uploads test results to a paste service")},
		"--junit-xml":               {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a JUnit report, replacing it")},
		"--junitxml":                {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a JUnit report, replacing it")},
		"--junit-prefix":            {value: pytestValue},
		"--junitprefix":             {value: pytestValue},
		// pytest-warnings; -W is checked for the category it would import
		"-W":                              {value: pytestValue},
		"--pythonwarnings":                {value: pytestValue},
		"--maxfail":                       {value: pytestValue},
		"--strict-config":                 {},
		"--strict-markers":                {},
		"--strict":                        {},
		"-c":                              {value: pytestValue, refuse: pytestConfig},
		"--continue-on-collection-errors": {},
		"--rootdir":                       {value: pytestValue, refuse: pytestRefuse(shellRunsCode, "moves the root directory, where its configuration, conftest.py files and cache are found")},
		// collection
		"--collect-only":                 {},
		"--collectonly":                  {},
		"--co":                           {},
		"--pyargs":                       {refuse: pytestRefuse(shellRunsCode, "imports its arguments as Python packages by name")},
		"--ignore":                       {value: pytestValue},
		"--ignore-glob":                  {value: pytestValue},
		"--deselect":                     {value: pytestValue},
		"--confcutdir":                   {value: pytestValue, refuse: pytestRefuse(shellRunsCode, "changes which conftest.py files it loads")},
		"--noconftest":                   {},
		"--keep-duplicates":              {},
		"--keepduplicates":               {},
		"--collect-in-virtualenv":        {},
		"--import-mode":                  {value: pytestValue, refuse: pytestRefuse(shellRunsCode, "changes where test modules are imported from")},
		"--doctest-modules":              {},
		"--doctest-report":               {value: pytestValue},
		"--doctest-glob":                 {value: pytestValue},
		"--doctest-ignore-import-errors": {},
		"--doctest-continue-on-failure":  {},
		// test session debugging and configuration
		"--basetemp":     {value: pytestValue, refuse: pytestRefuse(shellDeletes, "empties that directory and writes test files there")},
		"-V":             {},
		"--version":      {},
		"-h":             {},
		"--help":         {},
		"-p":             {value: pytestValue},
		"--trace-config": {},
		"--traceconfig":  {},
		"--debug":        {value: pytestOptional, refuse: pytestRefuse(shellDeletes, "writes a debug log, replacing it")},
		"-o":             {value: pytestValue, refuse: pytestOverride},
		"--override-ini": {value: pytestValue, refuse: pytestOverride},
		"--assert":       {value: pytestValue},
		"--setup-only":   {},
		"--setuponly":    {},
		"--setup-show":   {},
		"--setupshow":    {},
		"--setup-plan":   {},
		"--setupplan":    {},
		// logging
		"--log-level":            {value: pytestValue},
		"--log-format":           {value: pytestValue},
		"--log-date-format":      {value: pytestValue},
		"--log-cli-level":        {value: pytestValue},
		"--log-cli-format":       {value: pytestValue},
		"--log-cli-date-format":  {value: pytestValue},
		"--log-file":             {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a log file, replacing it")},
		"--log-file-level":       {value: pytestValue},
		"--log-file-format":      {value: pytestValue},
		"--log-file-date-format": {value: pytestValue},
		"--log-auto-indent":      {value: pytestValue},
		// the cacheprovider and stepwise plugins
		"--lf":                      {},
		"--last-failed":             {},
		"--ff":                      {},
		"--failed-first":            {},
		"--nf":                      {},
		"--new-first":               {},
		"--cache-show":              {value: pytestOptional},
		"--cache-clear":             {refuse: pytestRefuse(shellDeletes, "deletes the cache directory")},
		"--lfnf":                    {value: pytestValue},
		"--last-failed-no-failures": {value: pytestValue},
		"--sw":                      {},
		"--stepwise":                {},
		"--sw-skip":                 {},
		"--stepwise-skip":           {},
		// other pytest versions and plugins, for the note
		"--config-file": {value: pytestValue, refuse: pytestConfig},
		"--resultlog":   {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a result log, replacing it")},
		"--result-log":  {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a result log, replacing it")},
		"--report-log":  {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a report log, replacing it")},
		"--html":        {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes an HTML report, replacing it")},
		"--cov":         {value: pytestOptional, refuse: pytestRefuse(shellDeletes, "writes coverage data, replacing it")},
		"--cov-report":  {value: pytestValue, refuse: pytestRefuse(shellDeletes, "writes a coverage report, replacing it")},
		"--tx":          {value: pytestValue, refuse: pytestRefuse(shellNetwork, "starts test workers on other hosts")},
		"--rsyncdir":    {value: pytestValue, refuse: pytestRefuse(shellNetwork, "copies directories to remote test workers")},
	}
}}

// shellPytestCheck lets pytest run with the options of shellPytestOptions
// that pass, read as argparse reads them: "--name=value" or "--name
// value", "-kEXPR" or "-k EXPR", and clusters of short flags ending in
// at most one that takes a value ("-qxkadd"). Beside argparse, pytest
// reads its arguments twice more, and both ask where they would load
// code:
//   - its plugin preparse imports the module of every word that is "-p"
//     followed by a name or starts with "-p" ("-pthis"), wherever it
//     stands, after "--" and as another option's value too; only
//     "no:NAME", which turns a plugin off, passes;
//   - "@file" reads more arguments from a file (pytest 8).
//
// After "--" argparse takes every word as a path, but the preparse does
// not, so a word there that starts with "-" asks. -W asks when its
// category (action:message:category:…) is dotted, since pytest imports
// the module to find the class. --doctest-glob passes whatever it could
// match: pytest matches it against the names in the sandbox's view of
// the workspace, where no credential-shaped name is left.
func shellPytestCheck(c *shellCall) { pytestCommand{c}.check() }

// pytestCommand is a call of pytest, read by pytest's own option grammar
// (argparse's, with its plugin preparse), which differs from the getopt
// the other commands share.
type pytestCommand struct{ *shellCall }

// check judges the call's options, as shellPytestCheck says.
func (c pytestCommand) check() {
	for _, w := range c.args {
		if strings.HasPrefix(w.value, "@") {
			c.refuseWritten(w.show(), shellOptionRule{risk: shellUnknown, what: "reads more arguments from a file"})
		}
	}
	for i := 0; i < len(c.args); i++ {
		plugin, text := "", c.args[i].show()
		switch v := c.args[i].value; {
		case v == "-p" && i+1 < len(c.args):
			i++
			plugin, text = c.args[i].value, text+" "+c.args[i].show()
		case strings.HasPrefix(v, "-p") && v != "-p":
			plugin = v[2:]
		default:
			continue
		}
		if !strings.HasPrefix(plugin, "no:") {
			c.refuseWritten(text, *pytestPlugin)
		}
	}
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		switch v := w.value; {
		case v == "--":
			for _, after := range c.args[i+1:] {
				if strings.HasPrefix(after.value, "-") {
					c.refuseWritten(after.show(), shellOptionRule{risk: shellRunsCode,
						what: "passes an option after --, which pytest's plugin preparse still reads"})
				}
			}
			return
		case strings.HasPrefix(v, "--"):
			name, value, given := strings.Cut(v, "=")
			opt, ok := shellPytestOptions.get()[name]
			text, at := w.show(), i
			if ok && opt.value == pytestValue && !given && i+1 < len(c.args) {
				i++
				value, text, at = c.args[i].value, text+" "+c.args[i].show(), i
			}
			c.option(name, text, opt, ok, given, value, at)
		case len(v) > 1 && v[0] == '-':
			i = c.shorts(i)
		}
	}
}

// shorts checks the short options in c.args[i] and returns the index
// of the last word they use.
func (c pytestCommand) shorts(i int) int {
	v, text := c.args[i].value, c.args[i].show()
	for j := 1; j < len(v); j++ {
		name := "-" + v[j:j+1]
		opt, ok := shellPytestOptions.get()[name]
		if !ok || opt.value == pytestFlag {
			c.option(name, text, opt, ok, false, "", i)
			if !ok {
				return i
			}
			continue
		}
		value, at := v[j+1:], i
		if value == "" && i+1 < len(c.args) {
			i++
			value, text, at = c.args[i].value, text+" "+c.args[i].show(), i
		}
		c.option(name, text, opt, true, true, value, at)
		return i
	}
	return i
}

// option judges one option: name as pytest defines it, the word
// holding it as written, its entry (known), whether a value came with it
// and the value, in the word at.
func (c pytestCommand) option(name, text string, opt shellPytestOption, known, given bool, value string, at int) {
	switch {
	case !known:
		c.refuse(fmt.Sprintf("pytest %s is not an option pytest lists; it may be a plugin's, which this check cannot know", shellShow(name)),
			shellUnknown, "uses an option pytest does not list, which may be a plugin's", "pytest "+text)
		return
	case opt.refuse != nil:
		c.refuseWritten(text, *opt.refuse)
		return
	case opt.value == pytestFlag && given:
		c.refuse(fmt.Sprintf("pytest %s takes no value", name), shellOther, "gives a value to an option that takes none", "pytest "+text)
		return
	}
	switch {
	case opt.code && !c.args[at].glob:
		c.args[at].code = true
	case name == "-p" && !strings.HasPrefix(value, "no:"):
		c.refuseWritten(text, *pytestPlugin)
	case name == "-W" || name == "--pythonwarnings":
		if fields := strings.Split(value, ":"); len(fields) > 2 && strings.Contains(fields[2], ".") {
			c.refuseWritten(text, shellOptionRule{risk: shellRunsCode, what: "imports the module of a warning category by name"})
		}
	}
}

// refuseWritten records a refused use of pytest, written as text.
func (c pytestCommand) refuseWritten(text string, r shellOptionRule) {
	c.refuse(fmt.Sprintf("pytest %s %s", text, r.what), r.risk, r.what, "pytest "+text)
}
