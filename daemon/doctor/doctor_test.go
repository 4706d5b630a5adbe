package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"shelldon/config"
	"shelldon/daemon/state"
	"shelldon/daemon/statedir"
	"shelldon/sandbox/cgroup"
	"shelldon/sandbox/image"
	"shelldon/testhost"
	"shelldon/testhost/systemdhost"
	"shelldon/transports/telegram/telegramtest"
)

// fakeRoot builds a host root holding the given files (a path ending in
// "/" is a directory).
func fakeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func lookPathFinding(names ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, n := range names {
			if n == name {
				return "/usr/bin/" + name, nil
			}
		}
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
}

func testHost(t *testing.T, files map[string]string, programs ...string) Host {
	return Host{Root: fakeRoot(t, files), LookPath: lookPathFinding(programs...), HTTP: &http.Client{Timeout: 5 * time.Second}}
}

// find returns the check named name.
func find(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check named %q in %+v", name, checks)
	return Check{}
}

// wantStatus fails unless c has the status, and a fix exactly when it is not OK.
func wantStatus(t *testing.T, c Check, want Status) {
	t.Helper()
	if c.Status != want {
		t.Errorf("check %q = %s (%s), want %s", c.Name, c.Status, c.Detail, want)
	}
	if c.Detail == "" {
		t.Errorf("check %q has no detail", c.Name)
	}
	if (c.Fix == "") != (c.Status == OK) {
		t.Errorf("check %q is %s with fix %q: a fix is due exactly when it is not ok", c.Name, c.Status, c.Fix)
	}
}

func TestSystemd(t *testing.T) {
	unreachable := func() (*godbus.Conn, error) { return nil, errors.New("no bus here") }
	tests := []struct {
		name  string
		files map[string]string
		bus   func() (*godbus.Conn, error)
		want  Status
		says  string
	}{
		{"systemd is PID 1 but its bus is unreachable", map[string]string{"run/systemd/system/": ""}, unreachable, Warn, "no bus here"},
		{"no systemd", map[string]string{"run/": ""}, unreachable, Warn, "child processes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := testHost(t, tt.files)
			h.SystemdBus = tt.bus
			c := h.systemd(context.Background())
			wantStatus(t, c, tt.want)
			if !strings.Contains(c.Detail, tt.says) {
				t.Errorf("systemd check detail = %q, want %q in it", c.Detail, tt.says)
			}
		})
	}
	t.Run("a real systemd answers", func(t *testing.T) {
		sys := systemdhost.Boot(t)
		h := testHost(t, map[string]string{"run/systemd/system/": ""})
		h.SystemdBus = func() (*godbus.Conn, error) { return systemdhost.Dial(sys.BusAddress) }
		c := h.systemd(context.Background())
		wantStatus(t, c, OK)
		if !strings.Contains(c.Detail, "shelldon-turn@") {
			t.Errorf("systemd check detail = %q, want it to name the turn units", c.Detail)
		}
	})
}

func TestNspawn(t *testing.T) {
	ok := testHost(t, nil, "systemd-nspawn").nspawn()
	wantStatus(t, ok, OK)
	if ok.Detail != "/usr/bin/systemd-nspawn" {
		t.Errorf("nspawn() detail = %q, want where it was found", ok.Detail)
	}
	missing := testHost(t, nil, "systemd").nspawn()
	wantStatus(t, missing, Fail)
	if !strings.Contains(missing.Fix, "systemd-container") {
		t.Errorf("nspawn() fix = %q, want the package to install", missing.Fix)
	}
}

func TestMemoryCgroup(t *testing.T) {
	const (
		controllers = "sys/fs/cgroup/cgroup.controllers"
		v1Limit     = "sys/fs/cgroup/memory/memory.limit_in_bytes"
		v1Swap      = "sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"
	)
	tests := []struct {
		name  string
		files map[string]string
		want  Status
		says  string
	}{
		{"memory enabled", map[string]string{controllers: "cpuset cpu io memory hugetlb pids rdma misc\n"}, OK, "cgroup v2"},
		{"memory last", map[string]string{controllers: "cpu io memory\n"}, OK, "cgroup v2"},
		{"memory only", map[string]string{controllers: "memory"}, OK, "cgroup v2"},
		{"no memory", map[string]string{controllers: "cpuset cpu io pids\n"}, Fail, "not enabled"},
		{"a name that only contains memory", map[string]string{controllers: "cpu nomemory memoryx\n"}, Fail, "not enabled"},
		{"empty", map[string]string{controllers: ""}, Fail, "not enabled"},
		{"no cgroup v2", map[string]string{"sys/fs/cgroup/": ""}, Fail, "no memory controller"},
		// A hybrid host (systemd's v2 mount tracks processes only) keeps
		// the memory controller in v1, where a sandboxed command's own
		// group holds its limit.
		{"v1 memory with swap accounting", map[string]string{v1Limit: "9223372036854771712\n", v1Swap: "9223372036854771712\n", "sys/fs/cgroup/unified/cgroup.controllers": ""}, OK, "cgroup v1"},
		{"v1 memory without swap accounting", map[string]string{v1Limit: "9223372036854771712\n"}, Warn, "swap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testHost(t, tt.files).memoryCgroup()
			wantStatus(t, c, tt.want)
			if !strings.Contains(c.Detail, tt.says) {
				t.Errorf("memoryCgroup() detail = %q, want it to say %q", c.Detail, tt.says)
			}
		})
	}
}

// TestMemoryCgroupProbe: where the doctor can make a control group of a
// command's own (the sandbox's way where systemd does not run it), what
// it finds there decides, not the layout alone.
func TestMemoryCgroupProbe(t *testing.T) {
	files := map[string]string{"sys/fs/cgroup/cgroup.controllers": "cpu io memory pids\n"}
	tests := []struct {
		name  string
		probe func() ([]string, error)
		want  Status
		says  string
	}{
		{"every limit holds", func() ([]string, error) { return []string{"memory", "swap", "tasks", "cpu"}, nil }, OK, "memory, swap, tasks, cpu"},
		{"swap escapes the limit", func() ([]string, error) { return []string{"memory", "tasks"}, nil }, Warn, "swap"},
		{"memory does not hold", func() ([]string, error) { return []string{"tasks"}, nil }, Fail, "without a memory limit"},
		{"no group can be made", func() ([]string, error) { return nil, errors.New("read-only file system") }, Fail, "read-only file system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := testHost(t, files)
			h.ProbeCgroup = tt.probe
			c := h.memoryCgroup()
			wantStatus(t, c, tt.want)
			if !strings.Contains(c.Detail, tt.says) {
				t.Errorf("memoryCgroup() detail = %q, want it to say %q", c.Detail, tt.says)
			}
		})
	}
}

// TestMemoryCgroupOnThisHost is the owner's `shelldon doctor` on this
// very machine: when a sandboxed command's own control group holds a
// memory limit here (the sandbox's way without systemd), the doctor must
// not call the memory cgroup a failure, whatever the layout.
func TestMemoryCgroupOnThisHost(t *testing.T) {
	testhost.Root(t)
	g, err := cgroup.New(fmt.Sprintf("doctor-test-%d", os.Getpid()), cgroup.Limits{MemoryMax: 64 << 20, TasksMax: 16})
	if err != nil {
		testhost.Missing(t, "a writable cgroup hierarchy with the memory controller", err.Error())
	}
	held := g.Enforced()
	if err := g.Delete(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(held, cgroup.EnforcedMemory) {
		testhost.Missing(t, "a memory limit a control group holds here (held: "+strings.Join(held, ", ")+")", "cgroup_enable=memory on Raspberry Pi kernels")
	}
	c := System().memoryCgroup()
	if c.Status == Fail {
		t.Errorf("memoryCgroup() on a host whose control groups hold %v = %s (%s), want ok or warn", held, c.Status, c.Detail)
	}
	if !strings.Contains(c.Detail, "memory") {
		t.Errorf("memoryCgroup() detail = %q, want it to say what holds", c.Detail)
	}
}

func TestSPI(t *testing.T) {
	answers := func() (string, error) { return "waveshare-2in13-v4 answered in 1.9s", nil }
	silent := func() (string, error) { return "", errors.New("BUSY never went low within 5s") }
	tests := []struct {
		name  string
		files map[string]string
		probe func() (string, error)
		want  Status
		says  string
	}{
		{"no SPI", map[string]string{"dev/spidev1.0": ""}, answers, Warn, "no /dev/spidev0.0"},
		{"SPI, display answers", map[string]string{"dev/spidev0.0": ""}, answers, OK, "answered"},
		{"SPI, no display", map[string]string{"dev/spidev0.0": ""}, silent, Warn, "no display answers: BUSY never went low"},
		{"SPI, nothing to ask", map[string]string{"dev/spidev0.0": ""}, nil, OK, "/dev/spidev0.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost(t, tc.files)
			h.ProbeDisplay = tc.probe
			c := h.spi()
			wantStatus(t, c, tc.want)
			if !strings.Contains(c.Detail, tc.says) {
				t.Errorf("spi() detail = %q, want it to say %q", c.Detail, tc.says)
			}
		})
	}
}

func TestStateDir(t *testing.T) {
	base := t.TempDir()
	existing := filepath.Join(base, "existing")
	if err := os.Mkdir(existing, 0o750); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(base, "a-file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
		want Status
	}{
		{"existing and writable", existing, OK},
		{"created on demand", filepath.Join(base, "new", "state"), OK},
		{"under a regular file", filepath.Join(blocker, "state"), Fail},
		{"a regular file", blocker, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.StateDir = tt.dir
			got := testHost(t, nil).stateDir(cfg)
			wantStatus(t, got, tt.want)
			if got.Status == OK {
				entries, err := os.ReadDir(tt.dir)
				if err != nil {
					t.Fatal(err)
				}
				if len(entries) != 0 {
					t.Errorf("stateDir(%s) left %d files behind", tt.dir, len(entries))
				}
			}
			if got.Status == Fail && !strings.Contains(got.Fix, tt.dir) {
				t.Errorf("stateDir(%s) fix = %q, want it to name the directory", tt.dir, got.Fix)
			}
		})
	}
}

// TestStateAccessFlagsWhatTheStateGroupCanRead: a state directory as an
// older core left it on a board, its memory tree, workspace and about.md
// readable by its group (the panel's user, say), fails with a line per
// entry naming the path, its mode and the command that narrows it; once
// core has opened it again, each is as it should be.
func TestStateAccessFlagsWhatTheStateGroupCanRead(t *testing.T) {
	testhost.Root(t)
	cfg := config.Default()
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	cfg.Worker.User = "nobody" // a workers' user this host has, of group nogroup
	l := statedir.Layout{Root: cfg.StateDir}
	for _, dir := range []string{l.Root, l.MemoryDir(), l.Workspace()} {
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o750|os.ModeSetgid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.About(), []byte("lives in Lyon"), 0o640); err != nil {
		t.Fatal(err)
	}
	got := testHost(t, nil).stateAccess(cfg)
	wantStatus(t, got, Fail)
	for _, want := range []string{
		l.MemoryDir() + " is mode 2750, want 0700",
		l.Root + " is mode 2750, want 0710",
		l.Workspace() + " is group 0, want 65534",
		l.About() + " is group 0, want 65534",
	} {
		if !strings.Contains(got.Detail, want) {
			t.Errorf("stateAccess detail = %q, want it to say %q", got.Detail, want)
		}
	}
	for _, want := range []string{"chmod 0700 " + l.MemoryDir(), "chmod 0710 " + l.Root, "chgrp nogroup " + l.Workspace() + " && chmod 2750 " + l.Workspace()} {
		if !strings.Contains(got.Fix, want) {
			t.Errorf("stateAccess fix = %q, want it to say %q", got.Fix, want)
		}
	}

	readers, err := state.ReadersOf(cfg.Worker.User)
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.OpenFor(l, readers)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	wantStatus(t, testHost(t, nil).stateAccess(cfg), OK)
}

// TestSandboxUser: doctor says who a sandboxed command is on the host.
func TestSandboxUser(t *testing.T) {
	testhost.Root(t)
	for _, tt := range []struct {
		user   string
		status Status
		detail string
	}{
		{"nobody", OK, "commands run in a user namespace whose root is nobody (uid 65534) on the host"},
		{"", Warn, "sandbox.user is empty: commands run as the workspace's owner, root on a board"},
		{"no-such-user-here", Warn, "commands run as the workspace's owner, root on a board"},
		{"root", Warn, "the sandbox user is root"},
	} {
		cfg := config.Default()
		cfg.StateDir, cfg.Sandbox.User = t.TempDir(), tt.user
		got := testHost(t, nil).sandboxUser(cfg)
		wantStatus(t, got, tt.status)
		if !strings.Contains(got.Detail, tt.detail) {
			t.Errorf("sandbox.user %q: detail %q, want %q in it", tt.user, got.Detail, tt.detail)
		}
	}
}

func TestCore(t *testing.T) {
	dir := testhost.ShortDir(t)
	listening := filepath.Join(dir, "bus.sock")
	ln, err := net.Listen("unix", listening)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })

	stale := filepath.Join(dir, "stale.sock")
	gone, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	gone.(*net.UnixListener).SetUnlinkOnClose(false)
	gone.Close()

	tests := []struct {
		name   string
		socket string
		want   Status
	}{
		{"core listening", listening, OK},
		{"stale socket", stale, Warn},
		{"no socket", filepath.Join(dir, "none.sock"), Warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Socket = tt.socket
			got := testHost(t, nil).core(cfg)
			wantStatus(t, got, tt.want)
			if !strings.Contains(got.Detail, tt.socket) {
				t.Errorf("core() detail = %q, want it to name %s", got.Detail, tt.socket)
			}
		})
	}
}

// modelServer answers GET /v1/models with status and records the
// Authorization header of each request.
type modelServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newModelServer(t *testing.T, status int) *modelServer {
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"data":[{"id":"test-model"}]}`))
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *modelServer) authorizations() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.auth...)
}

func TestProviders(t *testing.T) {
	good := newModelServer(t, http.StatusOK)
	broken := newModelServer(t, http.StatusInternalServerError)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	provider := func(name, url string) config.Provider {
		return config.Provider{Name: name, BaseURL: url + "/v1", Model: "test-model"}
	}
	tests := []struct {
		name      string
		providers []config.Provider
		want      Status
		detail    []string // the detail names these
		files     map[string]string
	}{
		// The development setup (`make run`, `shelldon up`) runs on the
		// demo model: no provider there is a note, not a failure.
		{"none, not installed", nil, Note, []string{"no provider", "demo model"}, nil},
		// The installed pet (shelldon.service, from the .deb or make
		// install; or an administrator's own copy) has no model at all.
		{"none, installed", nil, Fail, []string{"no provider", "shelldon.service", "broker"}, map[string]string{"lib/systemd/system/shelldon.service": ""}},
		{"none, installed under /usr/lib", nil, Fail, []string{"no provider"}, map[string]string{"usr/lib/systemd/system/shelldon.service": ""}},
		{"none, the administrator's unit", nil, Fail, []string{"no provider"}, map[string]string{"etc/systemd/system/shelldon.service": ""}},
		{"one reachable", []config.Provider{provider("good", good.URL)}, OK, []string{"good"}, nil},
		{"trailing slash", []config.Provider{{Name: "slash", BaseURL: good.URL + "/v1/", Model: "m"}}, OK, []string{"slash"}, nil},
		{"answers 500", []config.Provider{provider("broken", broken.URL)}, Fail, []string{"broken", "500"}, nil},
		{"wrong path", []config.Provider{{Name: "nopath", BaseURL: good.URL, Model: "m"}}, Fail, []string{"nopath", "404"}, nil},
		{"unreachable", []config.Provider{provider("gone", closed.URL)}, Fail, []string{"gone"}, nil},
		{"not a URL", []config.Provider{{Name: "bad", BaseURL: "http://[::1", Model: "m"}}, Fail, []string{"bad"}, nil},
		{"one good, one bad", []config.Provider{provider("good", good.URL), provider("broken", broken.URL)}, Warn, []string{"broken"}, nil},
		{"credential not installed", []config.Provider{{Name: "cred", BaseURL: good.URL + "/v1", Model: "m", APIKeyCredential: "cred-key"}}, Fail, []string{"cred", "/etc/shelldon/credentials/cred-key does not exist"}, nil},
	}
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Providers = tt.providers
			got := testHost(t, tt.files).providers(context.Background(), cfg)
			wantStatus(t, got, tt.want)
			for _, s := range tt.detail {
				if !strings.Contains(got.Detail, s) {
					t.Errorf("providers() detail = %q, want it to mention %q", got.Detail, s)
				}
			}
		})
	}
}

func TestProvidersSendTheKey(t *testing.T) {
	credentials := t.TempDir()
	if err := os.WriteFile(filepath.Join(credentials, "from-file"), []byte("sk-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CREDENTIALS_DIRECTORY", credentials)
	tests := []struct {
		name     string
		provider config.Provider
		want     string
	}{
		{"api_key", config.Provider{APIKey: "sk-inline"}, "Bearer sk-inline"},
		{"api_key_credential", config.Provider{APIKeyCredential: "from-file"}, "Bearer sk-file"},
		{"no key", config.Provider{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newModelServer(t, http.StatusOK)
			p := tt.provider
			p.Name, p.BaseURL, p.Model = "keyed", srv.URL+"/v1", "m"
			cfg := config.Default()
			cfg.Providers = []config.Provider{p}
			got := testHost(t, nil).providers(context.Background(), cfg)
			wantStatus(t, got, OK)
			if auth := srv.authorizations(); len(auth) != 1 || auth[0] != tt.want {
				t.Errorf("the provider got Authorization %q, want one request with %q", auth, tt.want)
			}
		})
	}
}

// TestProvidersReadTheInstalledKey: doctor run by root on the board (as
// `shelldon setup` runs it) is outside shelldon-broker.service, which
// loads the keys from /etc/shelldon/credentials: doctor reads them there.
func TestProvidersReadTheInstalledKey(t *testing.T) {
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	srv := newModelServer(t, http.StatusOK)
	cfg := config.Default()
	cfg.Providers = []config.Provider{{Name: "openai", BaseURL: srv.URL + "/v1", Model: "m", APIKeyCredential: "openai-api-key"}}
	host := testHost(t, map[string]string{"etc/shelldon/credentials/openai-api-key": "sk-installed\n"})
	got := host.providers(context.Background(), cfg)
	wantStatus(t, got, OK)
	if auth := srv.authorizations(); len(auth) != 1 || auth[0] != "Bearer sk-installed" {
		t.Errorf("the provider got Authorization %q, want one request with the installed key", auth)
	}
}

func TestProvidersNeverShowTheKey(t *testing.T) {
	broken := newModelServer(t, http.StatusUnauthorized)
	cfg := config.Default()
	cfg.Providers = []config.Provider{{Name: "secret", BaseURL: broken.URL + "/v1", Model: "m", APIKey: "sk-do-not-print"}}
	got := testHost(t, nil).providers(context.Background(), cfg)
	wantStatus(t, got, Fail)
	if strings.Contains(got.Detail+got.Fix, "sk-do-not-print") {
		t.Errorf("providers() = %+v: the key is in the report", got)
	}
}

func TestProvidersStopWithTheContext(t *testing.T) {
	srv := newModelServer(t, http.StatusOK)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := config.Default()
	cfg.Providers = []config.Provider{{Name: "p", BaseURL: srv.URL + "/v1", Model: "m"}}
	got := testHost(t, nil).providers(ctx, cfg)
	wantStatus(t, got, Fail)
	if !strings.Contains(got.Detail, context.Canceled.Error()) {
		t.Errorf("providers(cancelled) detail = %q, want the cancellation", got.Detail)
	}
}

// builtImage is the marker file of a verified sandbox image for the
// current recipe, as `shelldon image build` leaves it, keyed by its path
// under the fake root.
func builtImage(t *testing.T) (path, marker string) {
	t.Helper()
	recipe, err := image.DefaultRecipe()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(image.Image{Hash: recipe.Hash(), Arch: "amd64", Built: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(filepath.Join(image.DefaultCacheDir, "sandbox-"+recipe.Hash(), ".verified"), "/"), string(raw)
}

func TestRunOnAHealthyHost(t *testing.T) {
	imagePath, marker := builtImage(t)
	host := testHost(t, map[string]string{
		"run/systemd/system/":              "",
		"sys/fs/cgroup/cgroup.controllers": "cpu io memory pids\n",
		"dev/spidev0.0":                    "",
		imagePath:                          marker,
	}, "systemd-nspawn")
	sys := systemdhost.Boot(t)
	host.SystemdBus = func() (*godbus.Conn, error) { return systemdhost.Dial(sys.BusAddress) }
	dir := testhost.ShortDir(t)
	cfg := config.Default()
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Socket = filepath.Join(dir, "bus.sock")
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg.Providers = []config.Provider{{Name: "good", BaseURL: newModelServer(t, http.StatusOK).URL + "/v1", Model: "m"}}
	cfg.Telegram.Token, cfg.Telegram.APIURL, cfg.Telegram.AllowedUsers = testBotToken, telegramtest.New(t, testBotToken).URL(), []int64{42}
	cfg.Sandbox.User = "nobody" // a user this host has, as the .deb makes shelldon-sandbox

	checks := host.Run(context.Background(), cfg)
	wantNames := []string{"systemd", "systemd-nspawn", "sandbox image", "sandbox user", "memory cgroup", "state directory", "state access", "state database", "core", "model provider", "telegram", "SPI (panel)"}
	if len(checks) != len(wantNames) {
		t.Fatalf("Run returned %d checks, want %d: %+v", len(checks), len(wantNames), checks)
	}
	for i, c := range checks {
		if c.Name != wantNames[i] {
			t.Errorf("check %d is %q, want %q", i, c.Name, wantNames[i])
		}
		wantStatus(t, c, OK)
	}
	var out bytes.Buffer
	if !Write(&out, checks) {
		t.Errorf("Write of all-ok checks = false\n%s", out.String())
	}
}

func TestRunOnABareHost(t *testing.T) {
	dir := testhost.ShortDir(t)
	cfg := config.Default()
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Socket = filepath.Join(dir, "bus.sock")
	checks := testHost(t, nil).Run(context.Background(), cfg)
	want := map[string]Status{
		"systemd":         Warn,
		"systemd-nspawn":  Fail,
		"sandbox image":   Fail,
		"sandbox user":    Warn,
		"memory cgroup":   Fail,
		"state directory": OK,
		"state access":    OK,
		"core":            Warn,
		"model provider":  Note,
		"telegram":        Warn,
		"SPI (panel)":     Warn,
	}
	for name, status := range want {
		wantStatus(t, find(t, checks, name), status)
	}
	var out bytes.Buffer
	if Write(&out, checks) {
		t.Errorf("Write of failing checks = true\n%s", out.String())
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name    string
		checks  []Check
		healthy bool
		lines   []string
	}{
		{"nothing", nil, true, nil},
		{
			"ok and warn",
			[]Check{
				{Name: "systemd", Status: OK, Detail: "systemd is PID 1"},
				{Name: "SPI (panel)", Status: Warn, Detail: "no SPI", Fix: "enable SPI"},
			},
			true,
			[]string{
				"ok   systemd          systemd is PID 1",
				"warn SPI (panel)      no SPI — fix: enable SPI",
			},
		},
		{
			"a note",
			[]Check{
				{Name: "model provider", Status: Note, Detail: "none: the demo model", Fix: "add a provider"},
			},
			true,
			[]string{
				"note model provider   none: the demo model — fix: add a provider",
			},
		},
		{
			"a failure",
			[]Check{
				{Name: "systemd-nspawn", Status: Fail, Detail: "not installed", Fix: "apt-get install systemd-container"},
				{Name: "core", Status: OK, Detail: "listening"},
			},
			false,
			[]string{
				"FAIL systemd-nspawn   not installed — fix: apt-get install systemd-container",
				"ok   core             listening",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := Write(&out, tt.checks); got != tt.healthy {
				t.Errorf("Write() = %v, want %v", got, tt.healthy)
			}
			var lines []string
			if out.Len() > 0 {
				lines = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			}
			if strings.Join(lines, "\n") != strings.Join(tt.lines, "\n") {
				t.Errorf("Write() printed\n%s\nwant\n%s", out.String(), strings.Join(tt.lines, "\n"))
			}
		})
	}
}

const testBotToken = "123456:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ"

func TestTelegram(t *testing.T) {
	api := telegramtest.New(t, testBotToken)
	tests := []struct {
		name    string
		files   map[string]string
		token   string
		users   []int64
		api     string
		want    Status
		details []string
	}{
		{"off", nil, "", []int64{42}, api.URL(), Warn, []string{"off"}},
		{"token file", map[string]string{TelegramTokenFile: testBotToken + "\n"}, "", []int64{42}, api.URL(), OK, []string{"@shelldon_test_bot", "1 allowed user"}},
		{"token in the configuration", nil, testBotToken, []int64{42, 43}, api.URL(), OK, []string{"2 allowed user"}},
		{"no allowed users: paired", nil, testBotToken, nil, api.URL(), Note, []string{"no allowed users", "pairing code"}},
		{"refused token", nil, "999:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ", []int64{42}, api.URL(), Fail, []string{"refuses the bot token", "401"}},
		{"out of reach", nil, testBotToken, []int64{42}, "http://127.0.0.1:1", Warn, []string{"out of reach"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Telegram.Token, cfg.Telegram.AllowedUsers, cfg.Telegram.APIURL = tc.token, tc.users, tc.api
			c := testHost(t, tc.files).telegram(context.Background(), cfg)
			wantStatus(t, c, tc.want)
			for _, d := range tc.details {
				if !strings.Contains(c.Detail, d) {
					t.Errorf("telegram check detail = %q, want it to say %q", c.Detail, d)
				}
			}
			if strings.Contains(c.Detail+c.Fix, "AAbbCC") {
				t.Errorf("the check shows the token: %q / %q", c.Detail, c.Fix)
			}
		})
	}
}

// TestStateDB: doctor says whether the state database is sound, fails on
// a damaged one (which core would otherwise meet at its start) with the
// fix, and warns of one core found damaged and moved aside.
func TestStateDB(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.StateDir = dir
	layout := statedir.Layout{Root: dir}
	host := testHost(t, nil)
	if c := host.stateDB(context.Background(), cfg); c.Status != OK || !strings.Contains(c.Detail, "none yet") {
		t.Errorf("stateDB with no database = %+v", c)
	}
	store, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	if c := host.stateDB(context.Background(), cfg); c.Status != OK || !strings.Contains(c.Detail, "sound") {
		t.Errorf("stateDB with a sound database = %+v", c)
	}
	// Garbage over the header: what a bad write on an SD card leaves.
	if err := os.WriteFile(layout.DB(), bytes.Repeat([]byte("garbage!"), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	c := host.stateDB(context.Background(), cfg)
	if c.Status != Fail || !strings.Contains(c.Detail, "damaged") || !strings.Contains(c.Fix, "moves the damaged file aside") {
		t.Errorf("stateDB with a damaged database = %+v, want a failure saying so and the fix", c)
	}
	// Core's next start moves it aside; doctor then warns of it.
	store, err = state.Open(layout)
	if err != nil {
		t.Fatalf("Open of the damaged database = %v", err)
	}
	store.Close()
	c = host.stateDB(context.Background(), cfg)
	if c.Status != Warn || !strings.Contains(c.Detail, layout.DamagedPrefix()) {
		t.Errorf("stateDB after the damaged file was moved aside = %+v, want a warning naming it", c)
	}
}

// TestStateDBBehindItsMark: a state.db put back to an older copy (or one
// whose write-ahead log was lost) is behind its high-water mark: doctor
// warns of it, with what it lost, before core starts and once core has
// noticed it, where it once said the database was sound.
func TestStateDBBehindItsMark(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.StateDir = dir
	layout := statedir.Layout{Root: dir}
	host := testHost(t, nil)
	store, err := state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	older, err := os.ReadFile(layout.DB())
	if err != nil {
		t.Fatal(err)
	}
	store, err = state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := store.Turns().Start(ctx, state.TurnStart{ID: "t1", Kind: "chat", Started: now}); err != nil {
		t.Fatal(err)
	}
	if err := store.Turns().Finish(ctx, state.TurnEnd{ID: "t1", Ended: now, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if err := os.WriteFile(layout.DB(), older, 0o600); err != nil {
		t.Fatal(err)
	}
	c := host.stateDB(ctx, cfg)
	if c.Status != Warn || !strings.Contains(c.Detail, "behind what core had written") || !strings.Contains(c.Detail, "turns 1 → 0") {
		t.Errorf("stateDB of a state.db put back to an older copy = %+v, want a warning of what it lost", c)
	}
	store, err = state.Open(layout)
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	c = host.stateDB(ctx, cfg)
	if c.Status != Warn || !strings.Contains(c.Detail, "core found it behind") || !strings.Contains(c.Fix, "owner was told") {
		t.Errorf("stateDB once core noticed the rollback = %+v, want a warning that it did", c)
	}
}

func TestMCP(t *testing.T) {
	cfg := config.Default()
	cfg.MCP = []config.MCP{
		{Name: "fine", Tools: []string{"greet", "ping"}},
		{Name: "misnamed", Tools: []string{"greet", "grete"}},
		{Name: "broken", Tools: []string{"greet"}},
	}
	h := testHost(t, nil)
	if got := h.mcp(context.Background(), cfg); len(got) != 3 || got[0].Status != Note {
		t.Errorf("mcp without a probe = %+v, want three notes", got)
	}
	h.ProbeMCP = func(_ context.Context, m config.MCP) ([]string, error) {
		switch m.Name {
		case "broken":
			return nil, errors.New("its process ended at once: exec: no such file")
		default: // the server has greet and ping
			var offered []string
			for _, tool := range m.Tools {
				if tool == "greet" || tool == "ping" {
					offered = append(offered, tool)
				}
			}
			return offered, nil
		}
	}
	got := h.mcp(context.Background(), cfg)
	want := []struct {
		status Status
		detail string
	}{
		{OK, "offers greet, ping"},
		{Warn, "has no tool grete"},
		{Fail, "no such file"},
	}
	for i, w := range want {
		if i >= len(got) || got[i].Status != w.status || !strings.Contains(got[i].Detail, w.detail) || got[i].Name != "mcp "+cfg.MCP[i].Name {
			t.Errorf("check %d = %+v, want %s saying %q", i, got, w.status, w.detail)
		}
		if i < len(got) && w.status != OK && got[i].Fix == "" {
			t.Errorf("check %d = %+v has no fix", i, got[i])
		}
	}
}
