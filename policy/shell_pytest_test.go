package policy

import (
	"strings"
	"testing"
)

// shellPytestHelp is every option `python3 -m pytest --help` lists in
// the sandbox image (pytest 7.2.1 on Python 3.11, with its cache
// provider and stepwise plugins), with a value where it takes one, and
// whether it may run without asking, and why.
var shellPytestHelp = []struct {
	option string // as written, with its value: "-k EXPR" is two words
	safe   bool
	why    string
}{
	// general
	{"-k add", true, "selects tests by name"},
	{"-m unit", true, "selects tests by mark"},
	{"--markers", true, "lists markers"},
	{"-x", true, "stops at the first failure"},
	{"--exitfirst", true, "stops at the first failure"},
	{"--fixtures", true, "lists fixtures"},
	{"--funcargs", true, "lists fixtures"},
	{"--fixtures-per-test", true, "lists fixtures"},
	{"--pdb", false, "the debugger runs the Python it reads from its input"},
	{"--pdbcls=mod:Cls", false, "imports a debugger class by name"},
	{"--trace", false, "the debugger runs the Python it reads from its input"},
	{"--capture=sys", true, "chooses how output is captured"},
	{"-s", true, "turns capturing off"},
	{"--runxfail", true, "reports xfail tests as normal"},
	// reporting
	{"--durations=5", true, "reports durations"},
	{"--durations-min=0.5", true, "reports durations"},
	{"-v", true, "prints more"},
	{"--verbose", true, "prints more"},
	{"--no-header", true, "prints less"},
	{"--no-summary", true, "prints less"},
	{"-q", true, "prints less"},
	{"--quiet", true, "prints less"},
	{"--verbosity=2", true, "sets how much is printed"},
	{"-r fE", true, "chooses the summary"},
	{"--disable-warnings", true, "prints less"},
	{"--disable-pytest-warnings", true, "prints less"},
	{"-l", true, "prints locals in tracebacks"},
	{"--showlocals", true, "prints locals in tracebacks"},
	{"--no-showlocals", true, "prints less"},
	{"--tb=short", true, "chooses the traceback style"},
	{"--show-capture=no", true, "chooses what captured output is shown"},
	{"--full-trace", true, "prints whole tracebacks"},
	{"--color=no", true, "chooses colours"},
	{"--code-highlight=no", true, "chooses colours"},
	{"--pastebin=failed", false, "sends the results to a paste service over the network"},
	{"--junit-xml=r.xml", false, "writes a report file"},
	{"--junit-prefix=x", true, "only changes names in a report it does not write here"},
	// pytest-warnings
	{"-W error", true, "turns warnings into errors; a builtin category imports nothing"},
	{"-W ignore::DeprecationWarning", true, "a builtin category imports nothing"},
	{"-W ignore::pkg.Warn", false, "imports the category's module"},
	{"--pythonwarnings=error::pkg.Warn", false, "imports the category's module"},
	{"--maxfail=2", true, "stops after failures"},
	{"--strict-config", true, "makes configuration warnings errors"},
	{"--strict-markers", true, "makes unknown markers errors"},
	{"--strict", true, "makes unknown markers errors"},
	{"-c other.ini", false, "loads configuration from another file, which can add options and plugins"},
	{"--continue-on-collection-errors", true, "runs the tests despite collection errors"},
	{"--rootdir=sub", false, "moves the root, where the configuration and the cache are found"},
	// collection
	{"--collect-only", true, "lists tests"},
	{"--co", true, "lists tests"},
	{"--pyargs", false, "imports the arguments as packages by name"},
	{"--ignore=tests/slow", true, "collects less"},
	{"--ignore-glob='*_slow.py'", true, "collects less"},
	{"--deselect=tests/test_a.py::test_b", true, "collects less"},
	{"--confcutdir=sub", false, "changes which conftest.py files load"},
	{"--noconftest", true, "loads no conftest.py"},
	{"--keep-duplicates", true, "collects duplicates"},
	{"--collect-in-virtualenv", true, "collects tests in a virtualenv of the workspace"},
	{"--import-mode=importlib", false, "changes how and from where test modules are imported"},
	{"--doctest-modules", true, "runs the doctests of the workspace's modules"},
	{"--doctest-report=udiff", true, "chooses the diff format"},
	{"--doctest-glob=README.rst", true, "runs the doctests of the workspace's text files"},
	{"--doctest-glob='*.rst'", true, "pytest matches the pattern in the sandbox's view, where .env.rst is hidden"},
	{"--doctest-ignore-import-errors", true, "ignores import errors"},
	{"--doctest-continue-on-failure", true, "goes on after a failure"},
	// test session debugging and configuration
	{"--basetemp=tmp", false, "empties that directory"},
	{"-V", true, "prints the version"},
	{"--version", true, "prints the version"},
	{"-h", true, "prints the help"},
	{"--help", true, "prints the help"},
	{"-p name", false, "imports the plugin"},
	{"-p no:doctest", true, "turns a plugin off"},
	{"--trace-config", true, "prints how conftest files are found"},
	{"--debug", false, "writes a debug log"},
	{"-o xfail_strict=True", false, "overrides ini settings, which can move the cache and logs"},
	{"--override-ini=xfail_strict=True", false, "overrides ini settings, which can move the cache and logs"},
	{"--assert=plain", true, "chooses how asserts are shown"},
	{"--setup-only", true, "only sets up fixtures"},
	{"--setup-show", true, "shows fixture setup"},
	{"--setup-plan", true, "shows the plan"},
	// logging
	{"--log-level=INFO", true, "chooses what is logged"},
	{"--log-format='%(message)s'", true, "chooses the log format"},
	{"--log-date-format=%H", true, "chooses the log format"},
	{"--log-cli-level=INFO", true, "chooses what is logged"},
	{"--log-cli-format='%(message)s'", true, "chooses the log format"},
	{"--log-cli-date-format=%H", true, "chooses the log format"},
	{"--log-file=x.log", false, "writes a log file"},
	{"--log-file-level=INFO", true, "chooses what a log file would hold"},
	{"--log-file-format='%(message)s'", true, "chooses what a log file would hold"},
	{"--log-file-date-format=%H", true, "chooses what a log file would hold"},
	{"--log-auto-indent=on", true, "chooses the log format"},
	// the cache provider and stepwise plugins
	{"--lf", true, "runs the last failures first"},
	{"--last-failed", true, "runs the last failures first"},
	{"--ff", true, "runs the last failures first"},
	{"--failed-first", true, "runs the last failures first"},
	{"--nf", true, "runs new tests first"},
	{"--new-first", true, "runs new tests first"},
	{"--cache-show", true, "prints the cache"},
	{"--cache-clear", false, "deletes the cache"},
	{"--lfnf=all", true, "chooses what --lf does without failures"},
	{"--last-failed-no-failures=none", true, "chooses what --lf does without failures"},
	{"--sw", true, "stops at the first failure and resumes there"},
	{"--stepwise", true, "stops at the first failure and resumes there"},
	{"--sw-skip", true, "skips the first failure"},
	{"--stepwise-skip", true, "skips the first failure"},
}

// TestClassifyPytestOptionList checks every option pytest lists, alone and
// in the other ways argparse reads it: a long option's value after "="
// or as the next word, a short option's value glued or as the next word,
// and a short flag in a cluster.
func TestClassifyPytestOptionList(t *testing.T) {
	for _, tt := range shellPytestHelp {
		forms := []string{tt.option}
		name, value, spaced := strings.Cut(tt.option, " ")
		long, glued, equals := strings.Cut(tt.option, "=")
		switch {
		case spaced && len(name) == 2:
			forms = append(forms, name+value, "-q"+name[1:]+value, "-q"+name[1:]+" "+value)
		case equals && strings.HasPrefix(long, "--"):
			forms = append(forms, long+" "+glued)
		case len(tt.option) == 2:
			forms = append(forms, "-q"+tt.option[1:], tt.option[:2]+"q")
		}
		for _, form := range forms {
			for _, command := range []string{"pytest " + form, "python3 -m pytest " + form} {
				if got := Classify(command, shellWorkspace); got.Safe != tt.safe {
					t.Error(shellMismatch(command, got, tt.safe, tt.why))
				}
			}
		}
	}
}

// TestClassifyPytestUnlistedOptions checks that options pytest does not
// list ask, whatever they would do: they belong to plugins, or to
// another pytest, and this check cannot know them.
func TestClassifyPytestUnlistedOptions(t *testing.T) {
	for _, option := range []string{"-n auto", "--timeout=5", "--cov", "--html=r.html", "--report-log=x",
		"--tx=ssh=host", "--config-file=x.ini", "--inifile=x", "-X", "-Z", "--co=yes", "--lf=x", "-q=x",
		"--verbose=2", "--exit", "--collect", "-1"} {
		command := "pytest " + option
		if got := Classify(command, shellWorkspace); got.Safe {
			t.Error(shellMismatch(command, got, false, "pytest does not list the option"))
		}
	}
}

// TestClassifyPytestNotes checks what the owner reads for pytest's
// refused options.
func TestClassifyPytestNotes(t *testing.T) {
	tests := []struct {
		command string
		level   RiskLevel
		want    string
	}{
		{"pytest -- -pthis", RiskLookClosely, "loads a plugin module by name (pytest -pthis)"},
		{"pytest -W ignore::this.X", RiskLookClosely, "imports the module of a warning category by name (pytest -W ignore::this.X)"},
		{"pytest --pyargs this", RiskLookClosely, "imports its arguments as Python packages by name (pytest --pyargs)"},
		{"pytest -c x.ini", RiskLookClosely, "loads its configuration from another file"},
		{"pytest --junitxml=r.xml", RiskLookClosely, "writes a JUnit report, replacing it (pytest --junitxml=r.xml)"},
		{"pytest -n 4", RiskRoutine, "uses an option pytest does not list, which may be a plugin's (pytest -n)"},
	}
	for _, tt := range tests {
		got := Classify(tt.command, shellWorkspace)
		if got.Safe || got.Level != tt.level || !strings.Contains(got.Note, tt.want) {
			t.Errorf("Classify(%q) = safe=%v level=%q note %q, want ask at %q with a note holding %q", tt.command, got.Safe, got.Level, got.Note, tt.level, tt.want)
		}
	}
}
