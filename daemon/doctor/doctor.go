package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/config"
	"shelldon/daemon/launch"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/panel/epd"
	"shelldon/sandbox"
	"shelldon/sandbox/cgroup"
	"shelldon/sandbox/image"
)

// Status of one check.
type Status string

// The statuses.
const (
	OK   Status = "ok"
	Warn Status = "warn" // shelldon runs, with less (no systemd: rlimits only)
	// Note is worth knowing, and right for this setup (no provider where
	// shelldon is not installed: `shelldon up` runs on the demo model).
	Note Status = "note"
	Fail Status = "FAIL" // shelldon cannot do its job until this is fixed
)

// Check is one finding.
type Check struct {
	Name   string
	Status Status
	Detail string
	// Fix says what to do; empty when Status is OK.
	Fix string
}

// Host is what the checks look at; tests point it at a fake root.
type Host struct {
	// Root is prefixed to the absolute paths the checks read ("/" in production).
	Root     string
	LookPath func(string) (string, error)
	HTTP     *http.Client
	// SystemdBus dials the bus on which core asks systemd for turn
	// units; nil means the system bus.
	SystemdBus func() (*godbus.Conn, error)
	// ProbeDisplay asks the e-ink display to answer; nil means there is
	// none to ask.
	ProbeDisplay func() (string, error)
	// ProbeCgroup makes a control group of a sandboxed command's own and
	// says which of its limits hold ([cgroup.Group.Enforced]); nil means
	// the layout of the hierarchy alone is judged.
	ProbeCgroup func() ([]string, error)
	// ProbeMCP starts a configured MCP server in its container and returns
	// the tools of the configuration's it offers; nil means the servers
	// are not started (each is then noted as not checked).
	ProbeMCP func(ctx context.Context, m config.MCP) ([]string, error)
}

// System is the running machine.
func System() Host {
	h := Host{Root: "/", LookPath: exec.LookPath, HTTP: &http.Client{Timeout: 3 * time.Second}, ProbeDisplay: epd.Probe}
	// Where systemd is PID 1 each command runs in a unit of its own that
	// systemd limits; a group of the doctor's own (inside an ssh or
	// login session's, which the kernel will not nest controllers under)
	// would say nothing of those.
	if !image.SystemdIsInit() {
		h.ProbeCgroup = probeCgroup
	}
	return h
}

// probeCgroup makes, and removes at once, a control group with the limits
// a sandboxed command gets where systemd does not run it in a unit, and
// says which hold.
func probeCgroup() ([]string, error) {
	if os.Geteuid() != 0 {
		return nil, errNotRoot
	}
	g, err := cgroup.New(fmt.Sprintf("doctor-%d", os.Getpid()), cgroup.Limits{MemoryMax: 64 << 20, TasksMax: 64, CPUQuota: 1})
	if err != nil {
		return nil, err
	}
	held := g.Enforced()
	if err := g.Delete(); err != nil {
		return nil, err
	}
	return held, nil
}

// errNotRoot says a check needs root to look: core runs as root, and
// what this user may not see says nothing of what core can do.
var errNotRoot = errors.New("only root can look")

func (h Host) path(p string) string { return filepath.Join(h.Root, p) }

// Run runs every check against cfg.
func (h Host) Run(ctx context.Context, cfg config.Config) []Check {
	return append([]Check{
		h.systemd(ctx),
		h.nspawn(),
		h.sandboxImage(),
		h.sandboxUser(cfg),
		h.memoryCgroup(),
		h.stateDir(cfg),
		h.stateAccess(cfg),
		h.stateDB(ctx, cfg),
		h.core(cfg),
		h.providers(ctx, cfg),
		h.telegram(ctx, cfg),
		h.spi(),
	}, h.mcp(ctx, cfg)...)
}

// mcp starts each configured MCP server, as core would at its first use,
// and says whether it offers the tools the configuration names.
func (h Host) mcp(ctx context.Context, cfg config.Config) []Check {
	var checks []Check
	for _, m := range cfg.MCP {
		c := Check{Name: "mcp " + m.Name}
		if h.ProbeMCP == nil {
			c.Status, c.Detail = Note, "not started by this doctor"
			checks = append(checks, c)
			continue
		}
		start := time.Now()
		offered, err := h.ProbeMCP(ctx, m)
		took := time.Since(start).Round(time.Millisecond)
		var missing []string
		for _, tool := range m.Tools {
			if !slices.Contains(offered, tool) {
				missing = append(missing, tool)
			}
		}
		switch {
		case err != nil:
			c.Status, c.Detail = Fail, fmt.Sprintf("did not start and list its tools: %v", err)
			c.Fix = fmt.Sprintf("check command, directory and arguments of [[mcp]] %q; shelldon sandbox run --dir DIR -- COMMAND runs it by hand", m.Name)
		case len(missing) > 0:
			c.Status, c.Detail = Warn, fmt.Sprintf("started in %v, but has no tool %s, so the model is not offered it (offers: %s)", took, strings.Join(missing, ", "), listOrNone(offered))
			c.Fix = fmt.Sprintf("correct tools in [[mcp]] %q to the server's own names", m.Name)
		default:
			c.Status, c.Detail = OK, fmt.Sprintf("started in %v; offers %s", took, strings.Join(offered, ", "))
		}
		checks = append(checks, c)
	}
	return checks
}

// TelegramTokenFile is where the owner puts the bot token; shelldon.service
// loads it as the credential config.TelegramCredential.
const TelegramTokenFile = "/etc/shelldon/telegram/token"

// ProviderKeysDirectory is where the owner keeps the providers' keys, a
// file each named by api_key_credential; shelldon-broker.service loads
// them as credentials. Doctor, outside that unit, reads them there.
const ProviderKeysDirectory = "/etc/shelldon/credentials"

// telegram says whether the owner can reach the pet on Telegram: a token
// (in the configuration, or the file shelldon.service loads), allowed
// users, and a Bot API server that accepts the token.
func (h Host) telegram(ctx context.Context, cfg config.Config) Check {
	c := Check{Name: "telegram"}
	// The token in the configuration, or in $CREDENTIALS_DIRECTORY where
	// that is set (a development state directory's credentials), else
	// the file shelldon.service loads.
	token, _, _ := cfg.Telegram.BotToken(os.Environ())
	if token == "" {
		data, err := os.ReadFile(h.path(TelegramTokenFile))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			c.Status, c.Detail = Warn, "off: no bot token, so the owner can chat only in a terminal"
			c.Fix = "create a bot with @BotFather, put its token in " + TelegramTokenFile + " (mode 0600), set telegram.allowed_users, and restart shelldon"
			return c
		case err != nil:
			c.Status, c.Detail = Fail, fmt.Sprintf("cannot read the bot token: %v", err)
			c.Fix = "run shelldon doctor as root, and keep " + TelegramTokenFile + " readable by root"
			return c
		}
		token = strings.TrimSpace(string(data))
	}
	unpaired := len(cfg.Telegram.AllowedUsers) == 0
	bot, err := BotName(ctx, h.HTTP, cfg.Telegram.APIURL, token)
	switch {
	case errors.Is(err, ErrTokenRefused):
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = "check the token with @BotFather (/token), and put it in " + TelegramTokenFile
		return c
	case err != nil:
		c.Status, c.Detail = Warn, err.Error()
		c.Fix = "check the network; the pet keeps its replies and sends them when Telegram is back"
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("bot @%s, %d allowed user(s)", bot, len(cfg.Telegram.AllowedUsers))
	if unpaired {
		c.Status, c.Detail = Note, fmt.Sprintf("bot @%s, no allowed users: its owner is the one a pairing code paired; strangers read only \"not paired\"", bot)
		c.Fix = fmt.Sprintf("shelldon pair, then send the code to @%s within 10 minutes", bot)
	}
	return c
}

// ErrTokenRefused is wrapped by BotName's error when the Bot API refuses
// the token, as opposed to not answering at all.
var ErrTokenRefused = errors.New("refuses the bot token")

// BotName asks the Bot API at apiURL who the bot of token is (getMe) and
// returns its username, without the @. A refusal wraps ErrTokenRefused
// and says the status and Telegram's words; a failure to reach it says
// only where, since the request's URL holds the token.
func BotName(ctx context.Context, client *http.Client, apiURL, token string) (string, error) {
	api := strings.TrimRight(apiURL, "/")
	if strings.ContainsAny(token, "/?#% \t\r\n") {
		return "", fmt.Errorf("%s %w: it holds characters no token of @BotFather has", api, ErrTokenRefused)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/bot"+token+"/getMe", nil)
	if err != nil {
		return "", fmt.Errorf("%s %w: it cannot be put in a URL", api, ErrTokenRefused)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s is out of reach", api)
	}
	defer resp.Body.Close()
	var me struct {
		OK     bool `json:"ok"`
		Result struct {
			Username string `json:"username"`
		} `json:"result"`
		Description string `json:"description"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&me)
	if !me.OK || me.Result.Username == "" {
		return "", fmt.Errorf("%s %w: %s %s", api, ErrTokenRefused, resp.Status, me.Description)
	}
	return me.Result.Username, nil
}

// systemd says which launcher core will use: a transient unit per turn
// where systemd is PID 1 and answers core over D-Bus, child processes
// under rlimits otherwise.
func (h Host) systemd(ctx context.Context) Check {
	c := Check{Name: "systemd"}
	if _, err := os.Stat(h.path("/run/systemd/system")); err == nil {
		if os.Geteuid() != 0 {
			c.Status, c.Detail = Warn, "systemd is PID 1, but only root may ask it for turn units: turns run as child processes under rlimits"
			c.Fix = "run core as root (units/shelldon.service does)"
			return c
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		sd, err := launch.NewSystemd(ctx, h.SystemdBus, launch.SystemdOptions{})
		if err != nil {
			c.Status, c.Detail = Warn, fmt.Sprintf("systemd is PID 1 but cannot be asked for turn units (%v): turns run as child processes under rlimits", err)
			c.Fix = "check that dbus is running (systemctl status dbus)"
			return c
		}
		sd.Close()
		c.Status, c.Detail = OK, "systemd is PID 1: each turn runs in a shelldon-turn@ unit"
		return c
	}
	c.Status, c.Detail = Warn, "systemd is not running as PID 1: turns run as plain child processes under rlimits"
	c.Fix = "run shelldon on a systemd host (Debian, Raspberry Pi OS) for per-turn cgroup limits"
	return c
}

func (h Host) nspawn() Check {
	c := Check{Name: "systemd-nspawn"}
	if p, err := h.LookPath("systemd-nspawn"); err == nil {
		c.Status, c.Detail = OK, p
		return c
	}
	c.Status, c.Detail = Fail, "systemd-nspawn is not installed: no command can run sandboxed"
	c.Fix = "apt-get install systemd-container"
	return c
}

func (h Host) sandboxImage() Check {
	c := Check{Name: "sandbox image"}
	recipe, err := image.DefaultRecipe()
	if err == nil {
		var st image.CacheStatus
		st, err = image.Status(h.path(image.DefaultCacheDir), recipe)
		if err == nil && st.Current != nil {
			c.Status, c.Detail = OK, fmt.Sprintf("%s (%s, built %s)", st.Current.Root, st.Current.Arch, st.Current.Built.Format("2006-01-02"))
			return c
		}
	}
	c.Status, c.Detail = Fail, "no sandbox image for the current recipe: no command can run sandboxed"
	if err != nil {
		c.Detail = err.Error()
	}
	c.Fix = "shelldon image build (or make image)"
	return c
}

// sandboxUser says who a sandboxed command is on the host: the sandbox
// user (sandbox.user), through a user namespace, where the kernel and the
// state directory's file system can show it the workspace as its own;
// without one, the workspace's owner, root on a board.
func (h Host) sandboxUser(cfg config.Config) Check {
	c := Check{Name: "sandbox user"}
	asRoot := "commands run as the workspace's owner, root on a board (capabilities dropped)"
	u, err := sandbox.LookupUser(cfg.Sandbox.User)
	switch {
	case cfg.Sandbox.User == "":
		c.Status, c.Detail = Warn, "sandbox.user is empty: "+asRoot
		c.Fix = `set sandbox.user = "shelldon-sandbox" (the .deb makes that user)`
		return c
	case err != nil:
		c.Status, c.Detail = Warn, fmt.Sprintf("%v: %s", err, asRoot)
		c.Fix = "systemd-sysusers (units/shelldon.sysusers makes shelldon-sandbox), or set sandbox.user"
		return c
	case os.Geteuid() != 0:
		c.Status, c.Detail = Warn, fmt.Sprintf("whether %s can be the commands' root only root can check (this is uid %d)", cfg.Sandbox.User, os.Geteuid())
		c.Fix = "run shelldon doctor as root"
		return c
	}
	// The workspace, or, before core made it, where it will be.
	dir := statedir.Layout{Root: cfg.StateDir}.Workspace()
	for _, err := os.Stat(dir); err != nil && dir != filepath.Dir(dir); _, err = os.Stat(dir) {
		dir = filepath.Dir(dir)
	}
	if err := sandbox.CheckUser(dir, *u); err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s (uid %d) cannot be the commands' root: %v", cfg.Sandbox.User, u.UID, err)
		c.Fix = `run Linux 5.19 or later with the state directory on ext4, btrfs or xfs, or set sandbox.user = "" to run commands as root (capabilities dropped)`
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("commands run in a user namespace whose root is %s (uid %d) on the host", cfg.Sandbox.User, u.UID)
	return c
}

// memoryCgroup says whether a command's memory limit can hold: the
// memory controller in cgroup v2, or in v1 (a hybrid host, where
// systemd's v2 mount only tracks processes), and, where the doctor can
// make one, what a control group of a command's own holds there.
func (h Host) memoryCgroup() Check {
	c := Check{Name: "memory cgroup"}
	version, swap, missing := h.memoryHierarchy()
	if missing != "" {
		c.Status, c.Detail = Fail, missing+": no command's memory limit can hold"
		c.Fix = "add cgroup_enable=memory to /boot/firmware/cmdline.txt (Raspberry Pi kernels) and reboot; elsewhere boot with systemd.unified_cgroup_hierarchy=1 (the default on Debian 12)"
		return c
	}
	c.Detail = "cgroup " + version + " with the memory controller"
	if h.ProbeCgroup == nil {
		c.Status = OK
		if !swap {
			c.Status, c.Detail = Warn, c.Detail+", but swap is not counted against a limit: a command may swap past it"
			c.Fix = "add swapaccount=1 to the kernel command line and reboot"
		}
		return c
	}
	held, err := h.ProbeCgroup()
	switch {
	case errors.Is(err, errNotRoot):
		c.Status, c.Detail = Warn, fmt.Sprintf("%s; whether a command's own control group holds its limit only root can check (this is uid %d)", c.Detail, os.Geteuid())
		c.Fix = "run shelldon doctor as root"
	case err != nil:
		c.Status, c.Detail = Fail, fmt.Sprintf("%s, but a command's own control group cannot be made (%v): a sandboxed command outside a systemd unit runs without a memory limit", c.Detail, err)
		c.Fix = "run core as root on a writable /sys/fs/cgroup, or under systemd (units/shelldon.service), which runs each command in a unit"
	case !slices.Contains(held, cgroup.EnforcedMemory):
		c.Status, c.Detail = Fail, fmt.Sprintf("%s, but a command's own control group holds only %s: a sandboxed command outside a systemd unit runs without a memory limit", c.Detail, listOrNone(held))
		c.Fix = "add cgroup_enable=memory to /boot/firmware/cmdline.txt (Raspberry Pi kernels) and reboot"
	case !slices.Contains(held, cgroup.EnforcedSwap):
		c.Status, c.Detail = Warn, fmt.Sprintf("%s: a command's own control group holds %s, but swap is not counted against its memory limit", c.Detail, listOrNone(held))
		c.Fix = "add swapaccount=1 to the kernel command line and reboot"
	default:
		c.Status, c.Detail = OK, fmt.Sprintf("%s: a command's own control group holds %s", c.Detail, listOrNone(held))
	}
	return c
}

// memoryHierarchy finds the memory controller: "v2" in the unified
// hierarchy, else "v1" in a hierarchy of its own, with whether swap is
// accounted there (v2 always can be). missing says what is wrong when
// there is neither.
func (h Host) memoryHierarchy() (version string, swap bool, missing string) {
	raw, err := os.ReadFile(h.path("/sys/fs/cgroup/cgroup.controllers"))
	if err == nil && slices.Contains(strings.Fields(string(raw)), "memory") {
		return "v2", true, ""
	}
	if _, err := os.Stat(h.path("/sys/fs/cgroup/memory/memory.limit_in_bytes")); err == nil {
		_, swapErr := os.Stat(h.path("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"))
		return "v1", swapErr == nil, ""
	}
	if err == nil {
		return "", false, "the memory controller is not enabled"
	}
	return "", false, "no memory controller in /sys/fs/cgroup, neither cgroup v2 nor v1"
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no limit"
	}
	return strings.Join(names, ", ")
}

func (h Host) stateDir(cfg config.Config) Check {
	c := Check{Name: "state directory"}
	dir := cfg.StateDir
	if err := os.MkdirAll(dir, 0o710); err != nil {
		if denied(&c, dir, err) {
			return c
		}
		c.Status, c.Detail, c.Fix = Fail, err.Error(), fmt.Sprintf("create %s writable by core, or set state_dir", dir)
		return c
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		if denied(&c, dir, err) {
			return c
		}
		c.Status, c.Detail, c.Fix = Fail, err.Error(), fmt.Sprintf("make %s writable by core", dir)
		return c
	}
	f.Close()
	os.Remove(f.Name())
	c.Status, c.Detail = OK, dir
	if free, err := (statedir.Layout{Root: dir}).Free(); err == nil && free < statedir.LowFree {
		c.Status, c.Detail = Warn, fmt.Sprintf("%s: only %d MiB free on its file system; writes of history, turns and requests will start to fail", dir, free>>20)
		c.Fix = "free some space on the card (old journals: journalctl --vacuum-size=50M)"
	}
	return c
}

// stateAccess says whether every entry of the state directory gives what
// it holds to whom it should and to no one else
// ([statedir.Layout.Access]): a memory tree, a workspace or an about.md
// that the state directory's group (the panel's user, say) can read
// fails, naming the path, its mode and the command that narrows it.
func (h Host) stateAccess(cfg config.Config) Check {
	c := Check{Name: "state access"}
	readers, err := state.ReadersOf(cfg.Worker.User)
	who := "workers of their own group read what a turn needs"
	if err != nil {
		who = "only core reads it (" + err.Error() + ")"
	}
	var faults, fixes []string
	for _, w := range (statedir.Layout{Root: cfg.StateDir}).Access(readers) {
		fi, err := os.Lstat(w.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case denied(&c, w.Path, err):
			return c
		case err != nil:
			faults = append(faults, err.Error())
			continue
		}
		fault := w.Fault(fi)
		if fault == "" {
			continue
		}
		faults = append(faults, fmt.Sprintf("%s is %s (it is for %s)", w.Path, fault, w.Who))
		switch {
		case fi.Mode()&fs.ModeSymlink != 0 || fi.IsDir() != w.Dir:
			fixes = append(fixes, "move "+w.Path+" aside")
		case w.GID >= 0:
			// chgrp first: a change of group drops the set-group-ID bit.
			fixes = append(fixes, fmt.Sprintf("chgrp %s %s && chmod %s %s", groupName(w.GID), w.Path, w.Chmod(), w.Path))
		default:
			fixes = append(fixes, fmt.Sprintf("chmod %s %s", w.Chmod(), w.Path))
		}
	}
	if len(faults) > 0 {
		c.Status, c.Detail = Fail, strings.Join(faults, "; ")
		c.Fix = strings.Join(fixes, "; ") + " (core sets them too at its next start: systemctl restart shelldon)"
		return c
	}
	c.Status, c.Detail = OK, "each role reads what it needs: "+who
	return c
}

// groupName is the name of group gid, or its number.
func groupName(gid int) string {
	if g, err := user.LookupGroupId(strconv.Itoa(gid)); err == nil {
		return g.Name
	}
	return strconv.Itoa(gid)
}

// stateDB says whether the state database is sound, and whether a
// damaged one was found and moved aside.
func (h Host) stateDB(ctx context.Context, cfg config.Config) Check {
	c := Check{Name: "state database"}
	layout := statedir.Layout{Root: cfg.StateDir}
	err := state.CheckFile(ctx, layout)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Status, c.Detail = OK, "none yet: core makes it when it starts"
		return c
	case denied(&c, layout.DB(), err):
		return c
	case errors.Is(err, state.ErrDamaged):
		c.Status, c.Detail = Fail, fmt.Sprintf("%s is %v", layout.DB(), err)
		c.Fix = "restart core (systemctl restart shelldon): it moves the damaged file aside and starts from the last backup, or afresh; the memory tree and the workspace are kept"
		return c
	case err != nil:
		c.Status, c.Detail = Fail, fmt.Sprintf("%s could not be checked: %v", layout.DB(), err)
		c.Fix = "run shelldon doctor again; if it says this again, stop core and check the file system (dmesg)"
		return c
	}
	c.Status, c.Detail = OK, "sound (quick_check)"
	if info, err := os.Stat(layout.Backup()); err == nil {
		c.Detail += fmt.Sprintf(", backed up %s", info.ModTime().Format("2006-01-02 15:04"))
	}
	warn := func(detail, fix string) {
		if c.Status == Warn {
			c.Detail, c.Fix = c.Detail+"; "+detail, c.Fix+"; "+fix
			return
		}
		c.Status, c.Detail, c.Fix = Warn, detail, fix
	}
	if damaged := state.Damaged(layout); len(damaged) > 0 {
		warn(fmt.Sprintf("a damaged database was found and moved aside: %s; the one in use is sound", strings.Join(damaged, ", ")),
			"what the damaged file held (history, turns, waiting requests) is in it; remove it once you do not need it")
	}
	last, unseen, err := state.CheckHighWater(ctx, layout)
	switch {
	case err != nil:
		warn(fmt.Sprintf("it could not be compared with its high-water mark (%s): %v", layout.HighWater(), err),
			"core writes the mark anew after the next turn; if this stays, check the file system (dmesg)")
	case unseen != nil:
		warn(fmt.Sprintf("it is behind what core had written: %s; %s", unseen.Why, lostSince(unseen)),
			"start core, which tells the owner; keep state.db-wal beside state.db whenever you copy or move the state")
	case last != nil && time.Since(last.Noticed) < rollbackShown:
		warn(fmt.Sprintf("core found it behind what it had written on %s: %s; %s", last.Noticed.Local().Format("2006-01-02 15:04"), last.Why, lostSince(last)),
			"the owner was told; keep state.db-wal beside state.db whenever you copy or move the state, and if it happens again check the card (dmesg)")
	}
	return c
}

// rollbackShown is how long doctor warns of a rollback core noticed.
const rollbackShown = 7 * 24 * time.Hour

// lostSince says what a rollback lost, for doctor.
func lostSince(r *state.Rollback) string {
	what := r.Lost()
	if what == "" {
		what = "no turn, history or request; at most a message or reply in flight"
	}
	return fmt.Sprintf("lost of what was written after %s: %s", r.Since.Local().Format("2006-01-02 15:04"), what)
}

func (h Host) core(cfg config.Config) Check {
	c := Check{Name: "core"}
	conn, err := net.DialTimeout("unix", cfg.Socket, time.Second)
	if denied(&c, cfg.Socket, err) {
		return c
	}
	if err != nil {
		c.Status, c.Detail = Warn, fmt.Sprintf("no core answers on %s", cfg.Socket)
		c.Fix = "systemctl start shelldon (or `shelldon up` for development)"
		return c
	}
	conn.Close()
	c.Status, c.Detail = OK, "core is listening on "+cfg.Socket
	return c
}

func (h Host) providers(ctx context.Context, cfg config.Config) Check {
	c := Check{Name: "model provider"}
	if len(cfg.Providers) == 0 {
		c.Fix = "add a [[provider]] table to the configuration (see config/shelldon.example.toml)"
		if unit := h.installedUnit(); unit != "" {
			c.Status, c.Detail = Fail, "no provider is configured: shelldon is installed ("+unit+"), and its broker (shelldon-broker.service) does not start without one"
			return c
		}
		c.Status, c.Detail = Note, "no provider is configured: `shelldon up` (make run) talks to the scripted demo model"
		c.Fix = "to talk to a real model, " + c.Fix
		return c
	}
	var reached []string
	var problems []string
	environ := os.Environ()
	if os.Getenv("CREDENTIALS_DIRECTORY") == "" { // outside shelldon-broker.service
		environ = append(environ, "CREDENTIALS_DIRECTORY="+h.path(ProviderKeysDirectory))
	}
	for _, p := range cfg.Providers {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.BaseURL, "/")+"/models", nil)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		}
		if key, err := p.Key(environ); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		} else if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := h.HTTP.Do(req)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", p.Name, err))
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			problems = append(problems, fmt.Sprintf("%s: %s answers %s", p.Name, p.BaseURL, resp.Status))
			continue
		}
		reached = append(reached, p.Name)
	}
	switch {
	case len(problems) == 0:
		c.Status, c.Detail = OK, "reachable: "+strings.Join(reached, ", ")
	case len(reached) > 0:
		c.Status, c.Detail = Warn, strings.Join(problems, "; ")
		c.Fix = "check the failing provider's base_url and key; the chain falls back to the others"
	default:
		c.Status, c.Detail = Fail, strings.Join(problems, "; ")
		c.Fix = "check base_url, the network, and the key (api_key_credential in $CREDENTIALS_DIRECTORY)"
	}
	return c
}

// serviceUnits are where shelldon.service is when shelldon is installed:
// the .deb's and make install's place, the same under a /usr that is not
// merged, and an administrator's own copy.
var serviceUnits = []string{"/lib/systemd/system/shelldon.service", "/usr/lib/systemd/system/shelldon.service", "/etc/systemd/system/shelldon.service"}

// installedUnit is the path of shelldon.service on this host, or "" where
// shelldon is not installed as a service (the development setup, which
// runs `shelldon up` from the source tree).
func (h Host) installedUnit() string {
	for _, unit := range serviceUnits {
		if _, err := os.Stat(h.path(unit)); err == nil {
			return unit
		}
	}
	return ""
}

func (h Host) spi() Check {
	c := Check{Name: "SPI (panel)"}
	if _, err := os.Stat(h.path("/dev/spidev0.0")); err != nil {
		c.Status, c.Detail = Warn, "no /dev/spidev0.0: the e-ink panel cannot be driven (the PNG file and the terminal preview still work)"
		c.Fix = "enable SPI: dtparam=spi=on in /boot/firmware/config.txt (or raspi-config), then reboot"
		return c
	}
	if h.ProbeDisplay == nil {
		c.Status, c.Detail = OK, "/dev/spidev0.0"
		return c
	}
	detail, err := h.ProbeDisplay()
	if err != nil {
		c.Status, c.Detail = Warn, "SPI is on, but no display answers: "+err.Error()
		c.Fix = "seat the Waveshare 2.13\" V4 HAT on the header, and run shelldon doctor as root or as a member of the spi and gpio groups"
		return c
	}
	c.Status, c.Detail = OK, detail
	return c
}

// denied fills in c, a check this user may not make, and reports
// whether err says so: core runs as root, and a file of its that this
// user may not use says nothing of whether core can, so it is a warning
// that only root can check, not a failure.
func denied(c *Check, path string, err error) bool {
	if !errors.Is(err, fs.ErrPermission) || os.Geteuid() == 0 {
		return false
	}
	c.Status = Warn
	c.Detail = fmt.Sprintf("permission denied on %s: this user (uid %d) may not use it, so only root can check", path, os.Geteuid())
	c.Fix = "run shelldon doctor as root"
	return true
}

// Write prints the checks one line each and reports whether none failed.
func Write(w io.Writer, checks []Check) bool {
	healthy := true
	for _, c := range checks {
		line := fmt.Sprintf("%-4s %-16s %s", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			line += " — fix: " + c.Fix
		}
		fmt.Fprintln(w, line)
		if c.Status == Fail {
			healthy = false
		}
	}
	return healthy
}
