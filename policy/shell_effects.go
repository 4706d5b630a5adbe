package policy

import (
	"path"
	"slices"
	"strings"
)

// describe notes what a command off the read/test list does, for the
// owner, and so decides whether it may delete or overwrite (see
// [shellRisk.mayDelete]): whatever writes to a name that may exist
// already is noted as overwriting it, since the policy cannot know
// statically that the name is free. A command this does not know is
// noted as "runs NAME, which this check does not know".
func (c *shellCall) describe() {
	switch c.base {
	case "rm", "rmdir", "unlink", "shred":
		c.note(shellDeletes, "deletes "+shellList(c.operands(""), "files"), c.flags())
	case "mv":
		if ops := c.operands("tS"); len(ops) >= 2 {
			c.note(shellDeletes, "moves "+shellList(ops[:len(ops)-1], "")+" over "+ops[len(ops)-1].show(), "mv")
		} else {
			c.note(shellDeletes, "moves files over others", c.flags())
		}
	case "cp", "install":
		c.copy()
	case "ln":
		c.link()
	case "touch", "mkdir", "mkfifo", "mknod":
		c.note(shellWrites, "creates "+shellList(c.operands("mt"), "files"), c.flags())
	case "tee":
		c.tee()
	case "truncate":
		c.note(shellDeletes, "truncates "+shellList(c.operands("sr"), "files"), c.flags())
	case "dd":
		for _, w := range c.args {
			if file, ok := strings.CutPrefix(w.value, "of="); ok {
				c.note(shellDeletes, "overwrites "+shellShow(file), "dd")
			}
		}
	case "chmod":
		if ops := c.operands(""); len(ops) > 1 {
			c.note(shellWrites, "changes the permissions of "+shellList(ops[1:], ""), c.flags())
		}
	case "chown", "chgrp":
		c.note(shellPrivilege, "changes the owner of "+shellList(c.operands(""), "files"), c.flags())
	case "cd", "pushd":
		c.cd()
	case "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "ping",
		"dig", "nslookup", "host", "whois", "http", "https", "aria2c", "lynx", "w3m", "ssh-copy-id":
		c.note(shellNetwork, "reaches the network", c.show(c.operands("")...))
	case "rsync":
		c.rsync()
	case "tar":
		c.tar()
	case "unzip":
		c.unzip()
	case "zip":
		c.zip()
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "compress", "uncompress":
		c.compressor()
	case "patch":
		c.note(shellDeletes, "rewrites the files a patch names", c.flags())
	case "pip", "pip3":
		c.pip(c.args)
	case "npx", "pnpx":
		c.note(shellNetwork, "reaches the network", c.flags())
		c.note(shellRunsCode, "downloads and runs a package", c.show(c.operands("")...))
	case "npm", "pnpm", "yarn", "gem", "cargo", "go":
		c.toolchain()
	case "apt", "apt-get", "aptitude", "dnf", "yum", "apk", "pacman", "zypper", "brew", "snap", "flatpak":
		c.systemPackages()
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish":
		c.shell()
	case "eval":
		c.note(shellRunsCode, "runs text as shell code", "eval")
		c.nested(c.args)
	case "source", ".":
		c.note(shellRuns, "runs "+shellList(c.operands(""), "a file")+" in this shell", c.base)
	case "exec":
		c.note(shellOther, "replaces the shell", "exec")
		c.wrapped(c.args)
	case "xargs":
		c.xargs()
	case "env":
		c.env()
	case "sudo", "doas", "pkexec", "runuser":
		c.note(shellPrivilege, "runs as another user", c.base)
		c.wrapped(c.leading("ugCDhprtTU"))
	case "su":
		c.note(shellPrivilege, "runs as another user", "su")
		c.commandString("-c", "--command")
	case "watch":
		c.note(shellOther, "runs a command again and again", "watch")
		c.nested(c.leading("nd"))
	case "kill", "pkill", "killall":
		c.note(shellPrivilege, "stops processes", c.show(c.args...))
	case "reboot", "shutdown", "poweroff", "halt", "systemctl", "service", "mount", "umount", "chroot",
		"useradd", "userdel", "usermod", "groupadd", "passwd", "iptables", "nft", "modprobe", "insmod",
		"rmmod", "sysctl", "swapon", "swapoff", "mkfs":
		c.note(shellPrivilege, "changes the system", c.flags())
	case "crontab", "at", "batch":
		c.note(shellRunsCode, "schedules commands to run later", c.base)
	case "awk", "gawk", "mawk", "nawk":
		c.awk()
	case "node", "nodejs", "deno", "bun", "ruby", "perl", "php", "lua", "Rscript":
		c.interpreter()
	default:
		if wrapper, ok := shellWrappers.get()[c.base]; ok {
			inner := c.leading(wrapper.takesValue)
			c.wrapped(inner[min(wrapper.skip, len(inner)):])
			return
		}
		if shellIsPython(c.base) {
			c.python()
			return
		}
		if c.base == "" {
			c.note(shellUnknown, "runs a command with an empty name", "")
			return
		}
		c.note(shellUnknown, "runs "+shellShow(c.base)+", which this check does not know", "")
	}
}

// shellWrappers run the command that follows their options (and skip
// positional words before it: the duration of timeout).
var shellWrappers = lazy[map[string]shellWrapper]{build: func() map[string]shellWrapper {
	return map[string]shellWrapper{
		"nohup": {}, "setsid": {}, "unbuffer": {}, "builtin": {}, "command": {},
		"nice": {takesValue: "n"}, "ionice": {takesValue: "cnpP"}, "stdbuf": {takesValue: "ioe"},
		"time": {takesValue: "fo"}, "timeout": {takesValue: "ks", skip: 1}, "strace": {takesValue: "abeEIoOpPsSuUX"},
	}
}}

// shellWrapper is how a wrapper's options are read: the short letters
// that take a value, and the positional words before the command.
type shellWrapper struct {
	takesValue string
	skip       int
}

// shellSystemDirs hold the system's programs: /bin/rm is rm.
var shellSystemDirs = []string{"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}

// program notes running a program named by its path.
func (c *shellCall) program() {
	p := c.name.value
	switch {
	case path.IsAbs(p) && c.a.inWorkspace(p):
		c.note(shellRuns, "runs the workspace program "+c.name.show(), "")
	case path.IsAbs(p) && slices.Contains(shellSystemDirs, path.Dir(path.Clean(p))):
		c.base = path.Base(p)
		c.describe()
	case path.IsAbs(p) || strings.HasPrefix(p, "~") || shellEscapes(p):
		c.note(shellRunsCode, "runs "+c.name.show()+", a program outside the workspace", "")
	default:
		c.note(shellRuns, "runs the workspace program "+c.name.show(), "")
	}
}

// operands returns the arguments that are not options.
func (c *shellCall) operands(takesValue string) []shellWord {
	return c.words(c.scan(shellGetopt{value: takesValue}, func(shellOption) {}))
}

// leading returns the arguments from the first one that is not an
// option: the command a wrapper runs. Long options are taken to have no
// separate value.
func (c *shellCall) leading(takesValue string) []shellWord {
	for i := 0; i < len(c.args); i++ {
		v := c.args[i].value
		switch {
		case v == "--":
			return c.args[i+1:]
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && v[0] == '-':
			if k := strings.IndexAny(v[1:], takesValue); k >= 0 && k+2 == len(v) {
				i++
			}
		default:
			return c.args[i:]
		}
	}
	return nil
}

// flags returns the program and the options it was given, as written:
// "rm -rf".
func (c *shellCall) flags() string {
	var options []shellWord
	for _, w := range c.args {
		if strings.HasPrefix(w.value, "-") && len(w.value) > 1 {
			options = append(options, w)
		}
	}
	return c.show(options...)
}

// shellListLimit is how many words a clause names before "…".
const shellListLimit = 3

// shellList names words for a clause, or none when there are no words.
func shellList(words []shellWord, none string) string {
	if len(words) == 0 {
		return none
	}
	shown := make([]string, 0, shellListLimit+1)
	for i, w := range words {
		if i == shellListLimit {
			shown = append(shown, "…")
			break
		}
		shown = append(shown, w.show())
	}
	return strings.Join(shown, ", ")
}

// wrapped judges the command a wrapper runs as a command of its own.
func (c *shellCall) wrapped(inner []shellWord) {
	if len(inner) > 0 {
		c.a.simple(inner)
	}
}

// nested reads words a command joins and runs as shell code.
func (c *shellCall) nested(words []shellWord) {
	values := make([]string, 0, len(words))
	for _, w := range words {
		if !w.literal {
			return
		}
		values = append(values, w.value)
	}
	if len(values) > 0 {
		c.a.readNested(strings.Join(values, " "))
	}
}

// commandString reads the shell code given after one of the options
// (su -c, sh -c).
func (c *shellCall) commandString(options ...string) {
	for i, w := range c.args {
		if slices.Contains(options, w.value) && i+1 < len(c.args) {
			c.nested(c.args[i+1 : i+2])
			return
		}
	}
}

func (c *shellCall) tee() {
	ops := c.operands("")
	if len(ops) == 0 {
		return
	}
	if slices.ContainsFunc(c.args, func(w shellWord) bool { return w.value == "-a" || w.value == "--append" }) {
		c.note(shellWrites, "appends to "+shellList(ops, ""), c.flags())
		return
	}
	c.note(shellDeletes, "overwrites "+shellList(ops, ""), c.flags())
}

// cd notes where the shell moves; a path outside is already noted by the
// argument rules.
func (c *shellCall) cd() {
	ops := c.operands("")
	switch {
	case len(ops) == 0:
		c.note(shellLeaves, "leaves the workspace for the home directory", c.base)
	case ops[0].value == "-":
		c.note(shellLeaves, "leaves the workspace for the previous directory", c.show(ops[0]))
	case ops[0].literal && !path.IsAbs(ops[0].value) && !strings.HasPrefix(ops[0].value, "~") && !shellEscapes(ops[0].value):
		c.note(shellOther, "moves into "+ops[0].show(), c.base)
	}
}

// rsync notes a copy by rsync: it replaces every file of the
// destination that differs from the source's, and its options may delete
// what the destination holds beyond the source (--delete and its kin) or
// the sources themselves (--remove-source-files).
func (c *shellCall) rsync() {
	ops := c.operands("e")
	if slices.ContainsFunc(ops, func(w shellWord) bool { return strings.Contains(w.value, ":") }) {
		c.note(shellNetwork, "reaches the network", c.show(ops...))
		return
	}
	if len(ops) < 2 {
		c.note(shellUnknown, "runs rsync without a destination, which this check does not read", c.flags())
		return
	}
	sources, dest := shellList(ops[:len(ops)-1], ""), ops[len(ops)-1].show()
	c.note(shellDeletes, "copies into "+dest+", overwriting what differs there", "rsync")
	for _, w := range c.args {
		switch {
		case strings.HasPrefix(w.value, "--del"):
			c.note(shellDeletes, "deletes what "+dest+" holds that "+sources+" lacks", "rsync "+w.show())
		case strings.HasPrefix(w.value, "--remove-s"):
			c.note(shellDeletes, "deletes "+sources+" once copied", "rsync "+w.show())
		}
	}
}

// copy notes cp and install, which replace a file of the target's name
// that exists, unless cp is told never to ([shellNoClobber]).
func (c *shellCall) copy() {
	target := "files"
	if ops := c.operands("tS"); len(ops) >= 2 {
		target = ops[len(ops)-1].show()
	}
	if c.base == "cp" && shellNoClobber(c) {
		c.note(shellWrites, "writes "+target+", overwriting nothing", c.flags())
		return
	}
	c.note(shellDeletes, "may overwrite "+target, c.flags())
}

// shellCpLong are GNU cp's long options (coreutils 9.1), for resolving
// an abbreviation; shellCpValued those that take the next word.
var (
	shellCpLong = []string{"archive", "attributes-only", "backup", "copy-contents", "debug", "dereference", "force",
		"interactive", "link", "no-clobber", "no-dereference", "no-preserve", "no-target-directory", "one-file-system",
		"parents", "path", "preserve", "recursive", "reflink", "remove-destination", "sparse", "strip-trailing-slashes",
		"suffix", "symbolic-link", "target-directory", "update", "verbose", "context", "help", "version"}
	shellCpValued = []string{"no-preserve", "sparse", "suffix", "target-directory"}
)

// shellNoClobberLong are the long options cp may take beside
// --no-clobber and still overwrite nothing; shellNoClobberFlags the
// short ones.
var shellNoClobberLong = []string{"no-clobber", "archive", "recursive", "preserve", "no-preserve", "verbose",
	"dereference", "no-dereference", "no-target-directory", "target-directory", "one-file-system", "parents"}

const shellNoClobberFlags = "naRrpvdLPTxt"

// shellNoClobber reports whether a cp command provably overwrites no
// file: it says -n (--no-clobber), which makes cp skip every target that
// exists, and nothing else but options that choose what is copied and
// how (-r, -a, -p, -v, -t DIR, …). Those that could undo -n or replace
// a file another way (-i and -f, which a later -n or -i overrides in
// some versions, --remove-destination, --update, --backup, -l and -s)
// and every option this check does not know make it false.
func shellNoClobber(c *shellCall) bool {
	noClobber := false
	spec := shellGetopt{value: "tS", flags: "abdfHilLnprsuvxPRTZ", long: shellCpValued, known: shellCpLong}
	within := c.optionsWithin(spec, shellNoClobberFlags, shellNoClobberLong, func(o shellOption) {
		noClobber = noClobber || o.name == "-n" || o.name == "--no-clobber"
	})
	return noClobber && within
}

// optionsWithin reports whether every option the call is given, read
// with spec, is one of the short letters or the long names; saw, if not
// nil, sees each.
func (c *shellCall) optionsWithin(spec shellGetopt, letters string, long []string, saw func(shellOption)) bool {
	within := true
	c.scan(spec, func(o shellOption) {
		if saw != nil {
			saw(o)
		}
		switch {
		case o.unknown:
			within = false
		case o.long():
			within = within && slices.Contains(long, o.name[2:])
		default:
			within = within && strings.Contains(letters, o.name[1:])
		}
	})
	return within
}

// shellLnLong are GNU ln's long options; shellLnKeeps those and
// shellLnKeepFlags the short ones with which ln fails on a name that
// exists rather than replace it.
var (
	shellLnLong      = []string{"backup", "directory", "force", "interactive", "logical", "no-dereference", "physical", "relative", "symbolic", "suffix", "target-directory", "no-target-directory", "verbose", "help", "version"}
	shellLnKeeps     = []string{"logical", "no-dereference", "physical", "relative", "symbolic", "target-directory", "no-target-directory", "verbose"}
	shellLnKeepFlags = "LnPrsTtv"
)

// link notes ln: without -f (or a backup, which moves the old name
// aside) it fails on a name that exists, so it only creates.
func (c *shellCall) link() {
	target := "a link"
	if ops := c.operands("St"); len(ops) >= 2 {
		target = ops[len(ops)-1].show()
	} else if len(ops) == 1 {
		target = "a link to " + ops[0].show()
	}
	spec := shellGetopt{value: "St", flags: "bdFfinrsLPTv", long: []string{"suffix", "target-directory"}, known: shellLnLong}
	if !c.optionsWithin(spec, shellLnKeepFlags, shellLnKeeps, nil) {
		c.note(shellDeletes, "may replace "+target, c.flags())
		return
	}
	c.note(shellWrites, "creates "+target, c.flags())
}

// shellTarModes are GNU tar's modes, by letter and by long name.
var shellTarModes = lazy[map[string]byte]{build: func() map[string]byte {
	return map[string]byte{
		"-c": 'c', "--create": 'c', "-x": 'x', "--extract": 'x', "--get": 'x', "-t": 't', "--list": 't',
		"-d": 'd', "--diff": 'd', "--compare": 'd', "-r": 'r', "--append": 'r', "-u": 'u', "--update": 'u',
		"-A": 'r', "--catenate": 'r', "--concatenate": 'r', "--delete": 'r',
	}
}}

// shellTarLong are GNU tar's long options this check reads: the modes,
// the archive, compression, and those that run a program or delete.
// Any other option is one this check does not know.
var shellTarLong = []string{"create", "extract", "get", "list", "diff", "compare", "append", "update", "catenate",
	"concatenate", "delete", "file", "directory", "verbose", "gzip", "gunzip", "ungzip", "bzip2", "xz",
	"auto-compress", "to-stdout", "keep-old-files", "skip-old-files", "remove-files", "force-local",
	"use-compress-program", "to-command", "checkpoint-action", "info-script", "new-volume-script",
	"rsh-command", "rmt-command"}

// shellTarRuns are tar's options that run a program their value names.
var shellTarRuns = []string{"-I", "-F", "--use-compress-program", "--to-command", "--checkpoint-action",
	"--info-script", "--new-volume-script", "--rsh-command", "--rmt-command"}

// tar notes what tar does, by its mode: extracting may overwrite any file
// the archive holds, creating or changing an archive overwrites it, and
// listing or comparing reads it. The first word may be the old style's
// letters without a dash (tar xf a.tar), read as one cluster; an option
// this check does not know is noted as such.
func (c *shellCall) tar() {
	args := slices.Clone(c.args)
	if len(args) > 0 && args[0].value != "" && strings.Trim(args[0].value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		args[0].value = "-" + args[0].value
	}
	var mode byte
	modeHow, archive, unknown := "", "", false
	spec := shellGetopt{value: "fbCgKLNTVXHIF", flags: "cxtdruAvzjJpkmOhaZ", known: shellTarLong,
		long: []string{"file", "directory", "use-compress-program", "to-command", "info-script", "new-volume-script", "rsh-command", "rmt-command"}}
	(&shellCall{a: c.a, base: c.base, args: args}).scan(spec, func(o shellOption) {
		switch m, isMode := shellTarModes.get()[o.name]; {
		case o.unknown:
			unknown = true
		case slices.Contains(shellTarRuns, o.name):
			c.note(shellRunsCode, "runs a program", "tar "+o.text)
		case o.name == "-f" || o.name == "--file":
			archive = o.value
		case o.name == "--remove-files":
			c.note(shellDeletes, "deletes the files it archives", "tar "+o.text)
		case isMode && mode == 0:
			mode, modeHow = m, "tar "+o.text
		}
	})
	shown := "its input"
	if archive != "" && archive != "-" {
		shown = shellShow(archive)
	}
	switch mode {
	case 'x':
		c.note(shellDeletes, "may overwrite any file it extracts from "+shown, modeHow)
	case 'c':
		if archive != "" && archive != "-" {
			c.note(shellDeletes, "overwrites "+shown, modeHow)
		}
	case 'r', 'u':
		c.note(shellDeletes, "rewrites "+shown, modeHow)
	case 't', 'd':
		c.note(shellOther, "lists "+shown, modeHow)
	default:
		c.note(shellUnknown, "runs tar without a mode this check reads", c.flags())
	}
	if unknown {
		c.note(shellUnknown, "uses a tar option this check does not know", c.flags())
	}
}

// unzip notes unzip: it extracts, replacing files that exist, unless it
// only lists, tests or prints (-l, -t, -v, -z, -Z, -p).
func (c *shellCall) unzip() {
	ops := c.operands("dx")
	archive := "an archive"
	if len(ops) > 0 {
		archive = ops[0].show()
	}
	reads := false
	for _, w := range c.args {
		reads = reads || len(w.value) > 1 && w.value[0] == '-' && strings.ContainsAny(w.value[1:], "ltvzZp")
	}
	if reads {
		c.note(shellOther, "lists or prints "+archive, c.flags())
		return
	}
	c.note(shellDeletes, "may overwrite any file it extracts from "+archive, c.flags())
}

// zip notes zip, which rewrites the archive it is given and, with -m,
// deletes the files it adds.
func (c *shellCall) zip() {
	ops := c.operands("bntx")
	archive := "an archive"
	if len(ops) > 0 {
		archive = ops[0].show()
	}
	c.note(shellDeletes, "rewrites "+archive, c.flags())
	for _, w := range c.args {
		switch {
		case w.value == "-m" || w.value == "--move":
			c.note(shellDeletes, "deletes the files it adds", "zip "+w.show())
		case w.value == "-TT" || strings.HasPrefix(w.value, "--unzip-command"):
			c.note(shellRunsCode, "runs a program to test the archive", "zip "+w.show())
		}
	}
}

// compressor notes gzip and its kin, which replace each file with its
// compressed or expanded form, unless they only print (-c), list (-l)
// or test (-t).
func (c *shellCall) compressor() {
	prints := false
	ops := c.words(c.scan(shellGetopt{value: "S", long: []string{"suffix"}}, func(o shellOption) {
		prints = prints || slices.Contains([]string{"-c", "-l", "-t", "--stdout", "--to-stdout", "--list", "--test"}, o.name)
	}))
	if prints {
		c.note(shellOther, "prints or tests the compressed or expanded form of "+shellList(ops, "its input"), c.flags())
		return
	}
	c.note(shellDeletes, "replaces "+shellList(ops, "files")+" with its compressed or expanded form", c.flags())
}

// pip notes a pip command given its arguments.
func (c *shellCall) pip(args []shellWord) {
	verb := ""
	if ops := (&shellCall{args: args}).operands(""); len(ops) > 0 {
		verb = ops[0].value
	}
	how := shellShow("pip " + verb)
	switch verb {
	case "install", "download", "wheel", "search", "index":
		c.note(shellNetwork, "reaches the network to fetch Python packages", how)
	case "uninstall":
		c.note(shellDeletes, "uninstalls Python packages", how)
	default:
		c.note(shellUnknown, "runs pip with a verb this check does not know", how)
	}
}

// shellToolchainVerbs are the verbs of language package managers that
// fetch from the network, and those that run the project's code.
var shellToolchainVerbs = lazy[map[string]struct{ network, runs []string }]{build: func() map[string]struct{ network, runs []string } {
	return map[string]struct{ network, runs []string }{
		"npm":   {network: []string{"install", "i", "ci", "add", "update", "up", "upgrade", "publish", "exec", "x", "create", "init"}, runs: []string{"run", "run-script", "test", "t", "start"}},
		"pnpm":  {network: []string{"install", "i", "add", "update", "up", "publish", "dlx", "exec", "create"}, runs: []string{"run", "test", "t", "start"}},
		"yarn":  {network: []string{"install", "add", "upgrade", "up", "publish", "dlx", "create"}, runs: []string{"run", "test", "start"}},
		"gem":   {network: []string{"install", "update", "push", "fetch"}},
		"cargo": {network: []string{"install", "fetch", "update", "publish", "search", "add"}, runs: []string{"build", "run", "test", "bench"}},
		"go":    {network: []string{"get", "install", "mod"}, runs: []string{"run", "test", "build", "generate"}},
	}
}}

func (c *shellCall) toolchain() {
	verb := ""
	if ops := c.operands(""); len(ops) > 0 {
		verb = ops[0].value
	}
	how := shellShow(c.base + " " + verb)
	switch verbs := shellToolchainVerbs.get()[c.base]; {
	case slices.Contains(verbs.network, verb):
		c.note(shellNetwork, "reaches the network to fetch packages", how)
	case slices.Contains(verbs.runs, verb):
		c.note(shellRuns, "runs the project's code", how)
	default:
		c.note(shellUnknown, "runs "+shellShow(c.base)+" with a verb this check does not know", how)
	}
}

func (c *shellCall) systemPackages() {
	c.note(shellPrivilege, "changes the system's packages", c.flags())
	for _, w := range c.args {
		switch v := w.value; {
		case slices.Contains([]string{"install", "update", "upgrade", "add", "full-upgrade", "dist-upgrade", "reinstall", "refresh"}, v),
			strings.HasPrefix(v, "-S"):
			c.note(shellNetwork, "reaches the network to fetch packages", shellShow(c.base+" "+v))
			return
		case slices.Contains([]string{"remove", "purge", "del", "uninstall", "autoremove", "erase"}, v), strings.HasPrefix(v, "-R"):
			c.note(shellDeletes, "removes system packages", shellShow(c.base+" "+v))
			return
		}
	}
}

// shell notes a shell started as a command: sh -c CODE reads CODE, sh
// FILE runs a script, sh alone runs what it reads.
func (c *shellCall) shell() {
	inline := false
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		v := w.value
		switch {
		case v == "-o" || v == "+o" || v == "-O" || v == "+O":
			i++
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			inline = inline || v[0] == '-' && strings.Contains(v, "c")
		case inline:
			c.note(shellRunsCode, "runs a shell command string", c.base+" -c")
			c.nested(c.args[i : i+1])
			return
		default:
			c.note(shellRuns, "runs "+w.show(), c.base)
			return
		}
	}
	c.note(shellRunsCode, "runs shell commands from its input", c.base)
}

func (c *shellCall) xargs() {
	inner := c.leading("adEILnPs")
	name := "echo"
	if len(inner) > 0 {
		name = inner[0].show()
	}
	c.note(shellRunsCode, "runs "+name+" on every word of its input", "xargs")
	c.wrapped(inner)
}

// env notes variables set and the command run.
func (c *shellCall) env() {
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		v := w.value
		switch {
		case v == "--":
		case v == "-S" || v == "--split-string":
			c.note(shellRunsCode, "runs a command string", "env "+v)
			if i+1 < len(c.args) {
				c.nested(c.args[i+1 : i+2])
			}
			return
		case v == "-u" || v == "-C" || v == "--unset" || v == "--chdir":
			i++
		case strings.HasPrefix(v, "-"):
		case shellAssignment(v) != "":
			c.a.refuse("sets variables (" + w.show() + ")")
			c.a.noteVariable(shellAssignment(v), w.show())
		default:
			c.wrapped(c.args[i:])
			return
		}
	}
	c.note(shellOther, "prints the environment", "env")
}

// shellAssignment returns the variable name of a NAME=value word, or "".
func shellAssignment(word string) string {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" || '0' <= name[0] && name[0] <= '9' {
		return ""
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c != '_' && !shellAlnum(name[i:i+1]) {
			return ""
		}
	}
	return name
}

// awk notes an awk program; one that can run commands or write files
// (system, |, >, getline) is looked at closely.
func (c *shellCall) awk() {
	if slices.ContainsFunc(c.args, func(w shellWord) bool { return w.value == "-f" || strings.HasPrefix(w.value, "--file") }) {
		c.note(shellRunsCode, "runs an awk program from a file", c.base+" -f")
		return
	}
	if ops := c.operands("fvF"); len(ops) > 0 && shellAwkProgram(ops[0].value) != "" {
		c.note(shellRunsCode, "runs an awk program that can run commands or write files", c.base)
		return
	}
	c.note(shellRuns, "runs an awk program", c.base)
}

// shellInline are the options with which interpreters run code given on
// the command line.
var shellInline = lazy[map[string][]string]{build: func() map[string][]string {
	return map[string][]string{
		"node": {"-e", "-p", "--eval", "--print"}, "nodejs": {"-e", "-p", "--eval", "--print"},
		"bun": {"-e", "--eval"}, "deno": {"eval"}, "ruby": {"-e"}, "perl": {"-e", "-E"},
		"php": {"-r"}, "lua": {"-e"}, "Rscript": {"-e"},
	}
}}

// interpreter notes a script interpreter: inline code, or a script file.
func (c *shellCall) interpreter() {
	for _, w := range c.args {
		v := w.value
		short := len(v) > 2 && v[0] == '-' && v[1] != '-' && slices.ContainsFunc(shellInline.get()[c.base], func(o string) bool {
			return len(o) == 2 && strings.Contains(v[1:], o[1:])
		})
		if slices.Contains(shellInline.get()[c.base], v) || short {
			c.note(shellRunsCode, "runs inline code", c.base+" "+w.show())
			return
		}
		if !strings.HasPrefix(v, "-") {
			c.note(shellRuns, "runs "+w.show(), c.base)
			return
		}
	}
	c.note(shellRunsCode, "runs code from its input", c.base)
}

// shellIsPython reports whether name is a Python interpreter: python,
// python3, python3.12.
func shellIsPython(name string) bool {
	version, ok := strings.CutPrefix(name, "python")
	return ok && strings.Trim(version, "0123456789.") == ""
}

// python notes a Python interpreter: inline code, a module, or a script.
func (c *shellCall) python() {
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		v := w.value
		switch {
		case strings.HasPrefix(v, "-c"):
			c.note(shellRunsCode, "runs inline Python", c.base+" -c")
			return
		case strings.HasPrefix(v, "-m"):
			module, rest := v[2:], c.args[i+1:]
			if module == "" && len(rest) > 0 {
				module, rest = rest[0].value, rest[1:]
			}
			c.pythonModule(module, rest)
			return
		case v == "-W" || v == "-X":
			i++
		case v == "-":
			c.note(shellRunsCode, "runs Python from its input", c.base+" -")
			return
		case strings.HasPrefix(v, "-"):
		default:
			c.note(shellRuns, "runs "+w.show(), c.base)
			return
		}
	}
	c.note(shellRuns, "starts Python", c.base)
}

func (c *shellCall) pythonModule(module string, rest []shellWord) {
	how := shellShow(c.base + " -m " + module)
	switch module {
	case "pip":
		c.pip(rest)
	case "http.server", "SimpleHTTPServer", "smtpd", "ftplib":
		c.note(shellNetwork, "serves or reaches the network", how)
	case "venv", "virtualenv":
		c.note(shellDeletes, "creates a virtual environment, overwriting one there", how)
	case "unittest":
		c.note(shellRuns, "runs the workspace's tests", how)
	default:
		c.note(shellUnknown, "runs the module "+shellShow(module)+", which this check does not know", how)
	}
}
