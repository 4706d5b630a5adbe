package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/manual"
)

// writeConfig writes contents to a fresh file and returns its path.
func writeConfig(t *testing.T, contents string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shelldon.toml")
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantError checks that err wraps ErrInvalid and mentions every fragment.
func wantError(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", fragments)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %q does not wrap ErrInvalid", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
	got, err := Load("", nil)
	if err != nil {
		t.Fatalf("Load(\"\", nil) error: %v", err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Errorf("Load(\"\", nil) = %+v, want Default() = %+v", got, Default())
	}
}

func TestExampleDecodesToDefaults(t *testing.T) {
	got, err := Load(writeConfig(t, Example), nil)
	if err != nil {
		t.Fatalf("Load(example) error: %v", err)
	}
	// `[]` in the file decodes to an empty slice, Default has nil; both mean none.
	if len(got.Turn.WorkerCommand) == 0 && len(got.Bus.AllowedUIDs) == 0 && len(got.Bus.TransportUsers) == 0 && len(got.Telegram.AllowedUsers) == 0 {
		got.Turn.WorkerCommand, got.Bus.AllowedUIDs, got.Bus.TransportUsers, got.Telegram.AllowedUsers = nil, nil, nil, nil
	}
	// Copied as it is, it starts shelldon as the defaults do: its provider
	// is commented out, for a copy with no credentials to start `up` on
	// the demo model.
	if want := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Load(example) =\n%+v\nwant\n%+v", got, want)
	}

	onDisk, err := os.ReadFile("shelldon.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != Example {
		t.Error("Example differs from shelldon.example.toml")
	}
}

// TestManualConfigurationsLoad: every configuration the manual (README.md
// and docs/) shows the owner loads as it stands — each ```toml block as a
// file, and the SHELLDON_ variables of its shell examples as an
// environment — and means what the manual says of it: a provider each,
// or an MCP server.
func TestManualConfigurationsLoad(t *testing.T) {
	pages, err := manual.Read("..")
	if err != nil {
		t.Fatal(err)
	}
	var block, environ []string
	fence := ""
	files := 0
	for _, line := range strings.Split(manual.Text(pages), "\n") {
		switch {
		case fence == "" && strings.HasPrefix(line, "```"):
			fence, block = strings.TrimPrefix(line, "```"), nil
		case fence != "" && line == "```":
			if fence == "toml" {
				files++
				got, err := Load(writeConfig(t, strings.Join(block, "\n")+"\n"), nil)
				if err != nil || len(got.Providers)+len(got.MCP) != 1 {
					t.Errorf("the manual's configuration\n%s\nloads as %+v %+v, %v; want it to load, with its provider or MCP server", strings.Join(block, "\n"), got.Providers, got.MCP, err)
				}
			}
			fence = ""
		case fence == "sh" && strings.HasPrefix(line, "SHELLDON_"):
			environ = append(environ, strings.TrimSpace(strings.TrimSuffix(strings.Fields(line)[0], "\\")))
		case fence != "":
			block = append(block, line)
		}
	}
	if files == 0 || len(environ) == 0 {
		t.Fatalf("the manual shows %d configuration files and the variables %q; want both kinds", files, environ)
	}
	got, err := Load("", environ)
	if err != nil || len(got.Providers) != 1 || got.Providers[0].APIKey == "" {
		t.Errorf("the manual's environment %q loads as %+v, %v; want one provider with its key", environ, got.Providers, err)
	}
}

// TestExampleProviderAsTheManualSays: the example's provider, once
// uncommented, is the one the manual tells the owner to set up: the same
// credential name in api_key_credential and under /etc/shelldon/credentials.
func TestExampleProviderAsTheManualSays(t *testing.T) {
	pages, err := manual.Read("..")
	if err != nil {
		t.Fatal(err)
	}
	text := manual.Text(pages)
	var uncommented []string
	for _, line := range strings.Split(Example, "\n") {
		if strings.HasPrefix(line, "# [[provider]]") || len(uncommented) > 0 && strings.HasPrefix(line, "# ") && strings.Contains(line, " = ") {
			uncommented = append(uncommented, strings.TrimPrefix(line, "# "))
			continue
		}
		if len(uncommented) > 0 {
			break
		}
	}
	got, err := Load(writeConfig(t, strings.Join(uncommented, "\n")+"\n"), nil)
	if err != nil || len(got.Providers) != 1 {
		t.Fatalf("the example's provider, uncommented (%q): %+v, %v", uncommented, got.Providers, err)
	}
	name := got.Providers[0].APIKeyCredential
	for _, want := range []string{"/etc/shelldon/credentials/" + name + "`", `api_key_credential = "` + name + `"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the manual does not say %s, as the example's provider (%s) needs", want, name)
		}
	}
}

// Every key must be documented in the example, set or commented out.
func TestExampleMentionsEveryKey(t *testing.T) {
	for _, s := range settings {
		pattern := `(?m)^(# )?` + regexp.QuoteMeta(leafKey(s.key)) + ` = `
		switch s.key {
		case "timeouts", "turn", "worker", "bus", "telegram", "panel", "mood", "schedule", "budget", "sandbox":
			pattern = `(?m)^\[` + s.key + `\]$`
		case "provider", "mcp":
			pattern = `(?m)^(# )?\[\[` + s.key + `\]\]$`
		}
		if !regexp.MustCompile(pattern).MatchString(Example) {
			t.Errorf("Example does not mention %s (looked for %s)", s.key, pattern)
		}
	}
}

// The settings table must list exactly the keys of the Config struct.
func TestSettingsMatchConfigFields(t *testing.T) {
	var fromStruct []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for field := range typ.Fields() {
			if !field.IsExported() {
				continue // not decoded: what Load remembers of a value
			}
			key := prefix + field.Tag.Get("toml")
			fromStruct = append(fromStruct, key)
			ft := field.Type
			if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[Duration]() {
				walk(key+".", ft)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())

	var fromTable []string
	for _, s := range settings {
		fromTable = append(fromTable, s.key)
	}
	slices.Sort(fromStruct)
	slices.Sort(fromTable)
	if !slices.Equal(fromStruct, fromTable) {
		t.Errorf("settings keys = %v\nConfig fields = %v", fromTable, fromStruct)
	}
}

func TestEnvironmentVariableNames(t *testing.T) {
	want := []string{
		"SHELLDON_STATE_DIR", "SHELLDON_SOCKET",
		"SHELLDON_TIMEOUTS_WORKER", "SHELLDON_TIMEOUTS_REAP", "SHELLDON_TIMEOUTS_TURN", "SHELLDON_TIMEOUTS_STOP_GRACE",
		"SHELLDON_TURN_HISTORY_MESSAGES", "SHELLDON_TURN_REACTION_DWELL", "SHELLDON_TURN_APPROVAL_EXPIRY", "SHELLDON_TURN_TOOL_STRIKES", "SHELLDON_TURN_RULE_DAYS", "SHELLDON_TURN_MAX_MODEL_CALLS",
		"SHELLDON_WORKER_MEMORY_LIMIT", "SHELLDON_WORKER_CPU_SECONDS", "SHELLDON_WORKER_OPEN_FILES", "SHELLDON_WORKER_USER",
		"SHELLDON_BUS_QUEUE_LENGTH", "SHELLDON_BUS_MAX_FRAME",
		"SHELLDON_TELEGRAM_TOKEN", "SHELLDON_TELEGRAM_ALLOWED_USERS", "SHELLDON_TELEGRAM_API_URL",
		"SHELLDON_TELEGRAM_POLL_TIMEOUT", "SHELLDON_TELEGRAM_RETRY_MAX", "SHELLDON_TELEGRAM_GIVE_UP_ATTEMPTS", "SHELLDON_TELEGRAM_GIVE_UP_AFTER",
		"SHELLDON_TELEGRAM_VOICE_MAX_BYTES", "SHELLDON_TELEGRAM_PHOTO_MAX_BYTES", "SHELLDON_TELEGRAM_PHOTO_MAX_SIDE", "SHELLDON_TELEGRAM_REACT",
		"SHELLDON_PANEL_DISPLAY", "SHELLDON_PANEL_PNG_PATH", "SHELLDON_PANEL_FULL_EVERY", "SHELLDON_PANEL_FULL_AFTER", "SHELLDON_PANEL_SLEEP_AFTER", "SHELLDON_PANEL_UPSIDE_DOWN",
		"SHELLDON_MOOD_TICK", "SHELLDON_MOOD_NIGHT", "SHELLDON_MOOD_LONELY",
		"SHELLDON_SCHEDULE_DAILY_BUDGET", "SHELLDON_SCHEDULE_COOLDOWN", "SHELLDON_SCHEDULE_DAILY_TOKEN_BUDGET",
		"SHELLDON_BUDGET_DAILY_TOKEN_CAP", "SHELLDON_BUDGET_CURRENCY",
		"SHELLDON_SANDBOX_DISK", "SHELLDON_SANDBOX_USER",
	}
	var got []string
	for _, s := range overridable() {
		got = append(got, envName(s.key))
	}
	if !slices.Equal(got, want) {
		t.Errorf("environment variables = %v, want %v", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.toml")
	_, err := Load(path, nil)
	wantError(t, err, "config "+path+": ", "no such file", "shelldon.example.toml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(%q) error %v does not wrap os.ErrNotExist", path, err)
	}
}

func TestLoadUnknownKey(t *testing.T) {
	tests := []struct {
		name, file string
		line       int // where the unknown key is
		want       []string
		notWant    string
	}{
		{"typo in a table", "[timeouts]\nwrker = \"1s\"\n", 2,
			[]string{`timeouts.wrker: unknown key`, `did you mean "timeouts.worker"?`, `known keys in [timeouts]: worker, reap, turn`}, ""},
		{"typo at the top", "stat_dir = \"/x\"\n", 1,
			[]string{`stat_dir: unknown key`, `did you mean "state_dir"?`, `known top-level keys: state_dir, socket, timeouts`}, ""},
		{"wrong case", "[Timeouts]\nWorker = \"1s\"\n", 1,
			[]string{`Timeouts: unknown key`, `did you mean "timeouts"?`}, "Timeouts.Worker"},
		{"key in the wrong table", "# the turn\n\n[turn]\ncpu_seconds = 30\n", 4,
			[]string{`turn.cpu_seconds: unknown key`, `did you mean "worker.cpu_seconds"?`, `known keys in [turn]: history_messages, reaction_dwell, approval_expiry, tool_strikes, rule_days, max_model_calls, worker_command`}, ""},
		{"typo in a provider", "[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\nnmae = \"b\"\n", 5,
			[]string{`provider.nmae: unknown key`, `did you mean "provider.name"?`, `known keys in [[provider]]: name, base_url`}, ""},
		{"typo in the second provider", "[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\n[[provider]]\nname = \"b\"\nbase_url = \"http://h\"\nmodel = \"m\"\ntimeuot = \"1s\"\n", 9,
			[]string{`provider.timeuot: unknown key`, `did you mean "provider.timeout"?`}, ""},
		{"unknown table reported once", "[gpu]\ncores = 4\nclock = 1\n", 1,
			[]string{`gpu: unknown key`, `known top-level keys`}, "gpu.cores"},
		{"nothing close", "[bus]\nzzzzzzzz = 1\n", 2,
			[]string{`bus.zzzzzzzz: unknown key; known keys in [bus]: allowed_uids, broker_users, transport_users, queue_length, max_frame`}, "did you mean"},
		{"dotted key", "state_dir = \"/x\"\ntimeouts.wrker = \"1s\"\n", 2,
			[]string{`timeouts.wrker: unknown key`}, ""},
		{"inline table", "state_dir = \"/x\"\n\ntimeouts = { worker = \"1s\", wrker = \"2s\" }\n", 3,
			[]string{`timeouts.wrker: unknown key`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.file)
			_, err := Load(path, nil)
			wantError(t, err, append(tt.want, fmt.Sprintf("config %s:%d: ", path, tt.line))...)
			if tt.notWant != "" && err != nil && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q mentions %q, want only the outermost unknown key", err, tt.notWant)
			}
		})
	}
}

func TestLoadWrongType(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"duration as a number", "# comment\n[timeouts]\nworker = 25\n",
			[]string{":3: timeouts.worker: ", `25 has no unit`, `"25s"`}},
		{"duration garbage", "[timeouts]\nreap = \"soon\"\n",
			[]string{":2: timeouts.reap: ", `"soon" is not a duration`}},
		{"integer as a string", "[turn]\n\nhistory_messages = \"twelve\"\n",
			[]string{":3: turn.history_messages: wrong type: the value is a string", "write a whole number"}},
		{"integer as a float", "[worker]\nopen_files = 6.5\n",
			[]string{":2: worker.open_files: wrong type: the value is a float"}},
		{"size garbage", "[bus]\nmax_frame = \"4MB\"\n",
			[]string{":2: bus.max_frame: ", `unknown unit "MB"`, `"512MiB"`}},
		{"table as a value", "timeouts = 3\n",
			[]string{":1: timeouts: wrong type: the value is an integer; write a table: the section [timeouts]"}},
		{"single-bracket provider", "[provider]\nname = \"x\"\n",
			[]string{"provider: wrong type: the value is a table", "[[provider]], in double brackets"}},
		{"list of the wrong things", "[bus]\nallowed_uids = [\"alice\"]\n",
			[]string{"bus.allowed_uids: wrong type", "an array of whole numbers"}},
		{"broker uid as a number", "[bus]\nbroker_users = [991]\n",
			[]string{":2: bus.broker_users: wrong type", `an array of strings, user names or uids, like ["shelldon-broker"]`}},
		{"one transport user without brackets", "[bus]\ntransport_users = \"alice\"\n",
			[]string{":2: bus.transport_users: wrong type: the value is a string"}},
		{"user ids as strings", "[telegram]\nallowed_users = [\"@alice\"]\n",
			[]string{":2: telegram.allowed_users: wrong type", "an array of whole numbers, like [123456789]"}},
		{"one user id without brackets", "[telegram]\nallowed_users = 42\n",
			[]string{":2: telegram.allowed_users: wrong type: the value is an integer"}},
		{"poll timeout as a number", "[telegram]\npoll_timeout = 30\n",
			[]string{":2: telegram.poll_timeout: ", "30 has no unit"}},
		{"syntax error", "state_dir = \"/x\"\nsocket = \n",
			[]string{":2: socket: "}},
		{"number out of range", "[worker]\ncpu_seconds = 99999999999999999999\n",
			[]string{":2: worker.cpu_seconds: ", "out of range"}},
		{"token cap as text", "[budget]\ndaily_token_cap = \"lots\"\n",
			[]string{":2: budget.daily_token_cap: wrong type: the value is a string", "a whole number of tokens"}},
		{"price with its currency", "[[provider]]\nname = \"a\"\nprice_prompt_per_million = \"$0.15\"\n",
			[]string{":3: provider.price_prompt_per_million: wrong type: the value is a string", "a number in your currency, like 0.15"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.file)
			_, err := Load(path, nil)
			wantError(t, err, append(tt.want, "config "+path)...)
		})
	}
}

func TestTimeoutsOrder(t *testing.T) {
	tests := []struct {
		name, worker, reap, turn string
		suggestion               string
	}{
		{"worker equals reap", "28s", "28s", "30s", `worker = "25s", reap = "28s", turn = "30s"`},
		{"worker after reap", "29s", "28s", "30s", `worker = "25s", reap = "28s", turn = "30s"`},
		{"reap after turn", "25s", "31s", "30s", `worker = "25s", reap = "28s", turn = "30s"`},
		{"all reversed", "60s", "40s", "20s", `worker = "16.7s", reap = "18.7s", turn = "20s"`},
		{"longer turn scales", "70s", "56s", "1m0s", `worker = "50s", reap = "56s", turn = "1m0s"`},
		{"zero worker", "0s", "28s", "30s", `worker = "25s"`},
		{"negative worker", "-1s", "28s", "30s", `worker = "25s"`},
		{"tiny turn falls back to defaults", "3ms", "2ms", "1ms", `worker = "25s", reap = "28s", turn = "30s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := "[timeouts]\nworker = \"" + tt.worker + "\"\nreap = \"" + tt.reap + "\"\nturn = \"" + tt.turn + "\"\n[worker]\ncpu_seconds = 1000\n"
			path := writeConfig(t, file)
			_, err := Load(path, nil)
			wantError(t, err, "config "+path+": timeouts: ", "0 < worker < reap < turn", "before systemd", tt.suggestion)
		})
	}
}

func TestRangeErrors(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string
	}{
		{"history too long", "[turn]\nhistory_messages = 500\n", []string{"turn.history_messages: 500 is out of range; use 0 to 200 (default 12)"}},
		{"negative history", "[turn]\nhistory_messages = -1\n", []string{"turn.history_messages: -1 is out of range"}},
		{"dwell too long", "[turn]\nreaction_dwell = \"2h\"\n", []string{"turn.reaction_dwell: 2h0m0s is out of range; use 0s to 1h0m0s"}},
		{"approvals that never wait", "[turn]\napproval_expiry = \"1s\"\n", []string{"turn.approval_expiry: 1s is out of range; use 1m0s to 168h0m0s"}},
		{"rules that never expire", "[turn]\nrule_days = 3650\n", []string{"turn.rule_days: 3650 is out of range; use 1 to 365"}},
		{"rules that expire at once", "[turn]\nrule_days = 0\n", []string{"turn.rule_days: 0 is out of range; use 1 to 365"}},
		{"no model calls", "[turn]\nmax_model_calls = 0\n", []string{"turn.max_model_calls: 0 is out of range; use 1 to 64 (default 8)"}},
		{"a thousand model calls", "[turn]\nmax_model_calls = 1000\n", []string{"turn.max_model_calls: 1000 is out of range; use 1 to 64 (default 8)"}},
		{"empty worker program", "[turn]\nworker_command = [\"\", \"worker\"]\n", []string{"turn.worker_command: its first element"}},
		{"memory too small", "[worker]\nmemory_limit = \"32MiB\"\n", []string{"worker.memory_limit: 32MiB is too small; use at least 128MiB"}},
		{"cpu below reap", "[worker]\ncpu_seconds = 27\n", []string{"worker.cpu_seconds: 27 is less than timeouts.reap (28s); use at least 28"}},
		{"cpu below fractional reap", "[timeouts]\nreap = \"28500ms\"\n[worker]\ncpu_seconds = 28\n", []string{"use at least 29"}},
		{"too few files", "[worker]\nopen_files = 8\n", []string{"worker.open_files: 8 is out of range; use 16 to 4096 (default 64)"}},
		{"worker user with a shell in it", "[worker]\nuser = \"root; rm -rf /\"\n", []string{`worker.user: "root; rm -rf /" is not a user name`}},
		{"sandbox user with a shell in it", "[sandbox]\nuser = \"x; id\"\n", []string{`sandbox.user: "x; id" is not a user name`}},
		{"negative uid", "[bus]\nallowed_uids = [1000, -1]\n", []string{"bus.allowed_uids: element 1, -1, is not a user id"}},
		{"broker user with a shell in it", "[bus]\nbroker_users = [\"shelldon-broker\", \"x; rm -rf /\"]\n",
			[]string{`bus.broker_users: element 1, "x; rm -rf /", is neither a user name nor a user id`, "`id -u USER`"}},
		{"negative uid as a transport user", "[bus]\ntransport_users = [\"-1\"]\n", []string{`bus.transport_users: element 0, "-1", is neither`}},
		{"no uid as a transport user", "[bus]\ntransport_users = [\"4294967295\"]\n", []string{`bus.transport_users: element 0, "4294967295", is neither`}},
		{"empty broker user", "[bus]\nbroker_users = [\"\"]\n", []string{`bus.broker_users: element 0, "", is neither`}},
		{"queue too short", "[bus]\nqueue_length = 4\n", []string{"bus.queue_length: 4 is out of range; use 8 to 65536 (default 256)"}},
		{"frame too big", "[bus]\nmax_frame = \"1GiB\"\n", []string{"bus.max_frame: 1GiB is out of range; use 64KiB to 64MiB (default 4MiB)"}},
		{"empty state_dir", "state_dir = \"\"\n", []string{"state_dir: is empty"}},
		{"sandbox disk too small", "[sandbox]\ndisk = \"1MiB\"\n", []string{"sandbox.disk: 1MiB is out of range; use 16MiB to 16GiB (default 128MiB)"}},
		{"negative token budget", "[schedule]\ndaily_token_budget = -1\n", []string{"schedule.daily_token_budget: -1 is out of range; use 0 to 1000000000 (default 0)"}},
		{"token cap past a billion", "[budget]\ndaily_token_cap = 2000000000\n", []string{"budget.daily_token_cap: 2000000000 is out of range; use 0 to 1000000000 (default 0)"}},
		{"a sentence for a currency", "[budget]\ncurrency = \"US dollars\"\n", []string{`budget.currency: "US dollars" is not a currency's name`, `like "USD"`}},
		{"a control character in the currency", "[budget]\ncurrency = \"\\u001b[31m\"\n", []string{`budget.currency: "\x1b[31m" is not a currency's name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.file)
			_, err := Load(path, nil)
			wantError(t, err, append(tt.want, "config "+path+": ")...)
		})
	}
}

// TestBusRoleUsers: the users who may be the broker or a transport are
// names or uids; a list in the file replaces the default, and an empty
// one leaves the role to root and core's own user.
func TestBusRoleUsers(t *testing.T) {
	if got := Default().Bus; !slices.Equal(got.BrokerUsers, []string{"shelldon-broker"}) || len(got.TransportUsers) != 0 {
		t.Errorf("default bus roles = brokers %q, transports %q; want the broker's user and no transport user", got.BrokerUsers, got.TransportUsers)
	}
	tests := []struct {
		file                string
		brokers, transports []string
	}{
		{"[bus]\nbroker_users = [\"991\", \"_pet-broker\"]\ntransport_users = [\"alice\", \"0\", \"4294967294\"]\n",
			[]string{"991", "_pet-broker"}, []string{"alice", "0", "4294967294"}},
		{"[bus]\nbroker_users = []\n", []string{}, nil},
	}
	for _, tt := range tests {
		got, err := Load(writeConfig(t, tt.file), nil)
		if err != nil {
			t.Errorf("Load(%q) = %v", tt.file, err)
			continue
		}
		if !slices.Equal(got.Bus.BrokerUsers, tt.brokers) || !slices.Equal(got.Bus.TransportUsers, tt.transports) {
			t.Errorf("Load(%q): brokers %q, transports %q; want %q, %q", tt.file, got.Bus.BrokerUsers, got.Bus.TransportUsers, tt.brokers, tt.transports)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Turn.HistoryMessages = -1
	c.Bus.QueueLength = 0
	err := c.Validate()
	wantError(t, err, "config in memory: turn.history_messages", "config in memory: bus.queue_length")
}

func TestEnvironmentOverridesFile(t *testing.T) {
	path := writeConfig(t, "state_dir = \"/srv/pet\"\n[timeouts]\nworker = \"20s\"\n[bus]\nmax_frame = \"1MiB\"\n")
	got, err := Load(path, []string{
		"HOME=/root",
		"SHELLDON_TIMEOUTS_WORKER=15s",
		"SHELLDON_TIMEOUTS_WORKER=10s", // the last entry wins, as in exec.Cmd.Env
		"SHELLDON_BUS_MAX_FRAME=8MiB",
		"SHELLDON_TURN_HISTORY_MESSAGES=3",
		"SHELLDON_TURN_MAX_MODEL_CALLS=5",
		"SHELLDON_WORKER_CPU_SECONDS=", // empty counts as unset
		"SHELLDON_PANEL_UPSIDE_DOWN=yes",
		"SHELLDON_TELEGRAM_REACT=false",
		"SHELLDON_SANDBOX_DISK=64MiB",
	})
	if err != nil {
		t.Fatalf("Load error: %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"timeouts.worker", got.Timeouts.Worker.Duration, 10 * time.Second},
		{"bus.max_frame", got.Bus.MaxFrame, Size(8 << 20)},
		{"turn.history_messages", got.Turn.HistoryMessages, 3},
		{"turn.max_model_calls", got.Turn.MaxModelCalls, 5},
		{"worker.cpu_seconds", got.Worker.CPUSeconds, 30},
		{"state_dir", got.StateDir, "/srv/pet"},
		{"socket", got.Socket, "/srv/pet/bus.sock"},
		{"panel.upside_down", got.Panel.UpsideDown, true},
		{"telegram.react", got.Telegram.React, false},
		{"sandbox.disk", got.Sandbox.Disk, Size(64 << 20)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestSocketDerivation(t *testing.T) {
	tests := []struct {
		name, file string
		environ    []string
		want       string
	}{
		{"default", "", nil, "/var/lib/shelldon/bus.sock"},
		{"from the file's state_dir", "state_dir = \"/a\"\n", nil, "/a/bus.sock"},
		{"from the environment's state_dir", "state_dir = \"/a\"\n", []string{"SHELLDON_STATE_DIR=/b"}, "/b/bus.sock"},
		{"set in the file", "socket = \"/run/shelldon.sock\"\n", []string{"SHELLDON_STATE_DIR=/b"}, "/run/shelldon.sock"},
		{"set in the environment", "socket = \"/run/a.sock\"\n", []string{"SHELLDON_SOCKET=/run/b.sock"}, "/run/b.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(writeConfig(t, tt.file), tt.environ)
			if err != nil {
				t.Fatalf("Load error: %v", err)
			}
			if got.Socket != tt.want {
				t.Errorf("Socket = %q, want %q", got.Socket, tt.want)
			}
		})
	}
}

func TestRelativeStateDirBecomesAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	got, err := Load(writeConfig(t, "state_dir = \"pet\"\n"), nil)
	if err != nil {
		t.Fatalf("Load error: %v", err)
	}
	if want := filepath.Join(dir, "pet"); got.StateDir != want {
		t.Errorf("StateDir = %q, want %q", got.StateDir, want)
	}
	if want := filepath.Join(dir, "pet", "bus.sock"); got.Socket != want {
		t.Errorf("Socket = %q, want %q", got.Socket, want)
	}
}

func TestSocketPathTooLong(t *testing.T) {
	long := "/" + strings.Repeat("d", 100)
	tests := []struct {
		name    string
		environ []string
		source  string
	}{
		{"derived from state_dir", []string{"SHELLDON_STATE_DIR=" + long}, "environment"},
		{"set directly", []string{"SHELLDON_SOCKET=" + long + "/s.sock"}, "environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("", tt.environ)
			wantError(t, err, "config "+tt.source+": socket: ", "longer than the 107", "shorter state_dir")
		})
	}
	exact := "/" + strings.Repeat("s", 106)
	if _, err := Load("", []string{"SHELLDON_SOCKET=" + exact}); err != nil {
		t.Errorf("Load with a %d-byte socket: %v, want nil", len(exact), err)
	}
}

func TestBadEnvironmentValue(t *testing.T) {
	tests := []struct {
		variable, value string
		want            string
	}{
		{"SHELLDON_TIMEOUTS_WORKER", "abc", `"abc" is not a duration`},
		{"SHELLDON_TIMEOUTS_REAP", "28", "28 has no unit"},
		{"SHELLDON_WORKER_MEMORY_LIMIT", "12MB", `unknown unit "MB"`},
		{"SHELLDON_TURN_HISTORY_MESSAGES", "many", `"many" is not a whole number`},
		{"SHELLDON_BUS_QUEUE_LENGTH", "1e3", `"1e3" is not a whole number`},
		{"SHELLDON_TELEGRAM_ALLOWED_USERS", "42;43", `"42;43" is not a comma-separated list of whole numbers; write the ids like 42,43`},
		{"SHELLDON_TELEGRAM_ALLOWED_USERS", "42,,43", "is not a comma-separated list"},
		{"SHELLDON_TELEGRAM_ALLOWED_USERS", "42,", "is not a comma-separated list"},
		{"SHELLDON_TELEGRAM_ALLOWED_USERS", "@alice", "is not a comma-separated list"},
		{"SHELLDON_TELEGRAM_ALLOWED_USERS", "[42, 43]", "is not a comma-separated list"},
		{"SHELLDON_TELEGRAM_ALLOWED_USERS", "99999999999999999999", "is not a comma-separated list"},
		{"SHELLDON_TELEGRAM_POLL_TIMEOUT", "30", "30 has no unit"},
	}
	for _, tt := range tests {
		t.Run(tt.variable+"="+tt.value, func(t *testing.T) {
			_, err := Load(writeConfig(t, ""), []string{tt.variable + "=" + tt.value})
			wantError(t, err, "config environment: "+tt.variable+": ", tt.want)
		})
	}
}

func TestValidationNamesTheSource(t *testing.T) {
	path := writeConfig(t, "[timeouts]\nworker = \"29s\"\n")
	tests := []struct {
		name    string
		path    string
		environ []string
		want    string
	}{
		{"file", path, nil, "config " + path + ": timeouts: "},
		{"environment", "", []string{"SHELLDON_TIMEOUTS_WORKER=29s"}, "config environment: timeouts: "},
		{"both", path, []string{"SHELLDON_TIMEOUTS_TURN=29s"}, "config " + path + " and environment: timeouts: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path, tt.environ)
			wantError(t, err, tt.want)
		})
	}
}

func TestUnknownVariable(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string // nil: no error
	}{
		{"typo", []string{"SHELLDON_TIMEOUT_WORKER=1s"},
			[]string{"config environment: SHELLDON_TIMEOUT_WORKER: not a shelldon variable", "did you mean SHELLDON_TIMEOUTS_WORKER?"}},
		{"far from anything", []string{"SHELLDON_COLOUR=blue"},
			[]string{"SHELLDON_COLOUR: not a shelldon variable; unset it; known variables: SHELLDON_STATE_DIR"}},
		{"empty unknown is still refused", []string{"SHELLDON_SOKET="}, []string{"did you mean SHELLDON_SOCKET?"}},
		{"allowed non-config variables", []string{"SHELLDON_CONFIG=/x", "SHELLDON_REQUIRE_ALL=1", "SHELLDON_TEST_HELPER=1", "PATH=/bin", "shelldon_lower=1", "NOEQUALS"}, nil},
		{"provider variable without URL", []string{"SHELLDON_PROVIDER_MODEL=m"},
			[]string{"SHELLDON_PROVIDER_MODEL: set without SHELLDON_PROVIDER_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("", tt.environ)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load(%q) = %v, want nil", tt.environ, err)
				}
				return
			}
			wantError(t, err, tt.want...)
		})
	}
}

func TestProviderShortcut(t *testing.T) {
	path := writeConfig(t, "[[provider]]\nname = \"file\"\nbase_url = \"https://a.example/v1\"\nmodel = \"m\"\n")
	got, err := Load(path, []string{
		"SHELLDON_PROVIDER_URL=http://127.0.0.1:8080/v1",
		"SHELLDON_PROVIDER_MODEL=tiny",
		"SHELLDON_PROVIDER_KEY=sk-test",
		"SHELLDON_TIMEOUTS_WORKER=20s",
	})
	if err != nil {
		t.Fatalf("Load error: %v", err)
	}
	want := []Provider{{Name: "env", BaseURL: "http://127.0.0.1:8080/v1", Model: "tiny", APIKey: "sk-test", Timeout: Duration{20 * time.Second}}}
	if !reflect.DeepEqual(got.Providers, want) {
		t.Errorf("Providers = %+v, want %+v", got.Providers, want)
	}

	got, err = Load("", []string{"SHELLDON_PROVIDER_URL=http://h/v1", "SHELLDON_PROVIDER_MODEL=m", "SHELLDON_PROVIDER_NAME=local"})
	if err != nil {
		t.Fatalf("Load error: %v", err)
	}
	if len(got.Providers) != 1 || got.Providers[0].Name != "local" {
		t.Errorf("Providers = %+v, want one named local", got.Providers)
	}

	_, err = Load("", []string{"SHELLDON_PROVIDER_URL=http://h/v1"})
	wantError(t, err, "config environment: SHELLDON_PROVIDER_MODEL: not set, but SHELLDON_PROVIDER_URL is")

	_, err = Load("", []string{"SHELLDON_PROVIDER_URL=ftp://h", "SHELLDON_PROVIDER_MODEL=m"})
	wantError(t, err, "config environment: provider[0].base_url: ", "not an http or https URL")
}

func TestProviderValidation(t *testing.T) {
	const valid = "name = \"a\"\nbase_url = \"https://h.example/v1\"\nmodel = \"m\"\n"
	tests := []struct {
		name      string
		providers string
		want      []string // nil: valid
	}{
		{"valid", "[[provider]]\n" + valid, nil},
		{"valid local without key", "[[provider]]\nname = \"local-1\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"q\"\ntimeout = \"10s\"\n", nil},
		{"empty name", "[[provider]]\nbase_url = \"https://h/v1\"\nmodel = \"m\"\n", []string{"provider[0].name: is empty"}},
		{"bad name", "[[provider]]\nname = \"Open Router\"\nbase_url = \"https://h/v1\"\nmodel = \"m\"\n", []string{`provider[0].name: "Open Router" has characters`}},
		{"duplicate name", "[[provider]]\n" + valid + "[[provider]]\n" + valid, []string{`provider[1].name: "a" is also the name of provider[0]`}},
		{"no base_url", "[[provider]]\nname = \"a\"\nmodel = \"m\"\n", []string{"provider[0].base_url: is empty"}},
		{"not http", "[[provider]]\nname = \"a\"\nbase_url = \"unix:///run/x\"\nmodel = \"m\"\n", []string{"not an http or https URL"}},
		{"no host", "[[provider]]\nname = \"a\"\nbase_url = \"https:///v1\"\nmodel = \"m\"\n", []string{"has no host"}},
		{"unparsable", "[[provider]]\nname = \"a\"\nbase_url = \"http://h:port/\"\nmodel = \"m\"\n", []string{"is not a URL"}},
		{"credentials in URL", "[[provider]]\nname = \"a\"\nbase_url = \"https://u:secret@h/v1\"\nmodel = \"m\"\n", []string{"holds credentials", "api_key_credential"}},
		{"query in URL", "[[provider]]\nname = \"a\"\nbase_url = \"https://h/v1?key=secret\"\nmodel = \"m\"\n", []string{"provider[0].base_url: has a query"}},
		{"no model", "[[provider]]\nname = \"a\"\nbase_url = \"https://h/v1\"\n", []string{"provider[0].model: is empty"}},
		{"both keys", "[[provider]]\n" + valid + "api_key = \"k\"\napi_key_credential = \"c\"\n", []string{"provider[0].api_key: is set together with api_key_credential"}},
		{"credential path", "[[provider]]\n" + valid + "api_key_credential = \"../etc/shadow\"\n", []string{`provider[0].api_key_credential: "../etc/shadow" is not a file name`}},
		{"negative timeout", "[[provider]]\n" + valid + "timeout = \"-1s\"\n", []string{"provider[0].timeout: -1s is negative"}},
		{"timeout past the worker", "[[provider]]\n" + valid + "timeout = \"26s\"\n", []string{"provider[0].timeout: 26s is longer than timeouts.worker (25s)"}},
		{"prices", "[[provider]]\n" + valid + "price_prompt_per_million = 0.15\nprice_completion_per_million = 2\n", nil},
		{"negative price", "[[provider]]\n" + valid + "price_prompt_per_million = -0.15\n", []string{"provider[0].price_prompt_per_million: -0.15 is not a price", "0 to 10000"}},
		{"price of no number", "[[provider]]\n" + valid + "price_completion_per_million = nan\n", []string{"provider[0].price_completion_per_million: NaN is not a price"}},
		{"infinite price", "[[provider]]\n" + valid + "price_completion_per_million = inf\n", []string{"provider[0].price_completion_per_million: +Inf is not a price"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.providers)
			_, err := Load(path, nil)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load = %v, want nil", err)
				}
				return
			}
			wantError(t, err, append(tt.want, "config "+path+": ")...)
		})
	}
	// The secret must not leak into the message.
	for _, url := range []string{"https://u:secret@h/v1", "https://h/v1?key=secret"} {
		_, err := Load(writeConfig(t, "[[provider]]\nname = \"a\"\nbase_url = \""+url+"\"\nmodel = \"m\"\n"), nil)
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("Load(base_url = %q) error %v, want one that hides the secret", url, err)
		}
	}
}

// TestProviderKeyNamesTheFile: a provider from the file whose credential
// cannot be read outside systemd (`shelldon up` on a copy of the
// production file) is reported against the file that named the
// credential, with the way to give the key there.
func TestProviderKeyNamesTheFile(t *testing.T) {
	path := writeConfig(t, "[[provider]]\nname = \"openrouter\"\nbase_url = \"https://openrouter.ai/api/v1\"\nmodel = \"m\"\napi_key_credential = \"openrouter-api-key\"\n")
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cfg.Providers[0].Key(nil)
	wantError(t, err, "config "+path+": ", `provider "openrouter": api_key_credential`, "$CREDENTIALS_DIRECTORY is not set", "api_key", "SHELLDON_PROVIDER_KEY")
	if err != nil && strings.Contains(err.Error(), sourceEnvironment+":") {
		t.Errorf("Key() = %q: the credential's name came from %s, not the environment", err, path)
	}
}

func TestProviderKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openrouter-api-key"), []byte("sk-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// As shelldon-broker.service loads /etc/shelldon/credentials/together.
	if err := os.WriteFile(filepath.Join(dir, CredentialPrefix+"together"), []byte("sk-dir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be cannot be read, even by root.
	if err := os.Mkdir(filepath.Join(dir, "unreadable"), 0o700); err != nil {
		t.Fatal(err)
	}
	withDir := []string{"CREDENTIALS_DIRECTORY=" + dir}
	tests := []struct {
		name     string
		provider Provider
		environ  []string
		want     string
		wantErr  []string
	}{
		{"inline key", Provider{Name: "a", APIKey: "sk-inline"}, nil, "sk-inline", nil},
		{"no key", Provider{Name: "local"}, withDir, "", nil},
		{"credential", Provider{Name: "a", APIKeyCredential: "openrouter-api-key"}, withDir, "sk-secret", nil},
		{"file of the credentials directory", Provider{Name: "a", APIKeyCredential: "together"}, withDir, "sk-dir", nil},
		{"missing credential", Provider{Name: "a", APIKeyCredential: "absent"}, withDir, "",
			[]string{filepath.Join(dir, "absent") + " does not exist", "/etc/shelldon/credentials/absent"}},
		{"no credentials directory", Provider{Name: "a", APIKeyCredential: "openrouter-api-key"}, nil, "",
			[]string{"$CREDENTIALS_DIRECTORY is not set", "/etc/shelldon/credentials/openrouter-api-key"}},
		{"empty credential", Provider{Name: "a", APIKeyCredential: "empty"}, withDir, "", []string{"is empty", "/etc/shelldon/credentials/empty"}},
		{"unreadable credential", Provider{Name: "a", APIKeyCredential: "unreadable"}, withDir, "",
			[]string{"cannot read the credential", "/etc/shelldon/credentials/unreadable"}},
		{"escaping credential", Provider{Name: "a", APIKeyCredential: ".."}, withDir, "", []string{"is not a file name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.provider.Key(tt.environ)
			if tt.wantErr != nil {
				wantError(t, err, tt.wantErr...)
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Key() = %q, %v, want %q, nil", got, err, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    Size
		wantErr bool
	}{
		{"0", 0, false},
		{"1024", 1024, false},
		{"64KiB", 64 << 10, false},
		{"4MiB", 4 << 20, false},
		{"512MiB", 512 << 20, false},
		{"1GiB", 1 << 30, false},
		{"2TiB", 2 << 40, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"-1", 0, true},
		{"-1MiB", 0, true},
		{"1.5GiB", 0, true},
		{"4MB", 0, true},
		{"4 MiB", 0, true},
		{"4mib", 0, true},
		{"1G2iB", 0, true},
		{"9223372036854775808", 0, true},
		{"8388608TiB", 0, true},
		{"0x10", 0, true},
	}
	for _, tt := range tests {
		var got Size
		err := got.UnmarshalText([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("UnmarshalText(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSizeString(t *testing.T) {
	tests := []struct {
		in   Size
		want string
	}{
		{0, "0"},
		{1000, "1000"},
		{1536, "1536"},
		{64 << 10, "64KiB"},
		{1 << 30, "1GiB"},
		{3 << 29, "1536MiB"},
	}
	for _, tt := range tests {
		text, err := tt.in.MarshalText()
		if err != nil || string(text) != tt.want {
			t.Errorf("Size(%d).MarshalText() = %q, %v, want %q", int64(tt.in), text, err, tt.want)
		}
		var back Size
		if err := back.UnmarshalText(text); err != nil || back != tt.in {
			t.Errorf("UnmarshalText(%q) = %d, %v, want %d", text, back, err, tt.in)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"25s", 25 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"0s", 0, ""},
		{"", 0, "empty duration"},
		{"25", 0, `25 has no unit; write it as a string with one, like "25s"`},
		{"2.5", 0, "has no unit"},
		{"soon", 0, `"soon" is not a duration`},
		{"25 s", 0, "is not a duration"},
		{"9999999999h", 0, "is not a duration"},
	}
	for _, tt := range tests {
		var got Duration
		err := got.UnmarshalText([]byte(tt.in))
		switch {
		case tt.wantErr == "" && (err != nil || got.Duration != tt.want):
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("UnmarshalText(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
		}
	}
	text, err := Duration{90 * time.Second}.MarshalText()
	if err != nil || string(text) != "1m30s" {
		t.Errorf("MarshalText(90s) = %q, %v, want 1m30s", text, err)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"wrker", "worker", 1},
		{"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(Example)
	f.Add("[timeouts]\nworker = 25\n")
	f.Add("[[provider]]\nname = \"a\"\nbase_url = \"http://[::1\"\n")
	f.Add("[bus]\nmax_frame = \"99999999999TiB\"\nallowed_uids = [1, \"x\", {a=1}]\n")
	f.Add("a.b.c.d = 1\n[x.\"y z\"]\n\"\" = 2\n")
	f.Add("[telegram]\ntoken = \"1:x\"\nallowed_users = [0, -1, 9223372036854775807]\napi_url = \"http://h?#\"\npoll_timeout = \"-1s\"\n")
	f.Fuzz(func(t *testing.T, contents string) {
		path := filepath.Join(t.TempDir(), "fuzz.toml")
		if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Load error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Errorf("Load accepted a config that Validate refuses: %v", err)
		}
	})
}

func FuzzParseUnits(f *testing.F) {
	for _, s := range []string{"4MiB", "25s", "", "-0", "1e400", "99999999999999999999KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var size Size
		if err := size.UnmarshalText([]byte(s)); err == nil {
			if size < 0 {
				t.Errorf("UnmarshalText(%q) = %d, want no negative size", s, size)
			}
			var back Size
			if err := back.UnmarshalText([]byte(size.String())); err != nil || back != size {
				t.Errorf("round trip of %q: %d → %q → %d, %v", s, size, size.String(), back, err)
			}
		}
		var d Duration
		_ = d.UnmarshalText([]byte(s))
		for _, prefix := range []string{"SHELLDON_TIMEOUTS_TURN=", "SHELLDON_BUS_MAX_FRAME=", "SHELLDON_SOCKET=", "SHELLDON_PROVIDER_URL=",
			"SHELLDON_TELEGRAM_ALLOWED_USERS=", "SHELLDON_TELEGRAM_API_URL=", "SHELLDON_TELEGRAM_TOKEN="} {
			if _, err := Load("", []string{prefix + s, "SHELLDON_PROVIDER_MODEL=m"}); err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("Load(%s%q) error %v does not wrap ErrInvalid", prefix, s, err)
			}
		}
	})
}

// validToken has the shape of a token from @BotFather.
const validToken = "123456789:AAH-dqTcvCH1vGWJxfSeofSAs0K5PAL_saw"

func TestTelegramFileAndEnvironment(t *testing.T) {
	const file = "[telegram]\ntoken = \"" + validToken + "\"\nallowed_users = [42, 43]\napi_url = \"http://127.0.0.1:8081\"\npoll_timeout = \"10s\"\nretry_max = \"5m\"\n"
	fromFile := Telegram{Token: validToken, AllowedUsers: []int64{42, 43}, APIURL: "http://127.0.0.1:8081",
		PollTimeout: Duration{10 * time.Second}, RetryMax: Duration{5 * time.Minute},
		GiveUpAttempts: 20, GiveUpAfter: Duration{24 * time.Hour}, VoiceMaxBytes: 2 << 20, PhotoMaxBytes: 1 << 20, PhotoMaxSide: 1280, React: true}
	tests := []struct {
		name, file string
		environ    []string
		want       Telegram
	}{
		{"defaults", "", nil, Default().Telegram},
		{"file", file, nil, fromFile},
		{"environment over the file", file, []string{
			"SHELLDON_TELEGRAM_TOKEN=987:" + strings.Repeat("b", 30),
			"SHELLDON_TELEGRAM_ALLOWED_USERS= 7, 8 ,9",
			"SHELLDON_TELEGRAM_API_URL=https://bots.example",
			"SHELLDON_TELEGRAM_POLL_TIMEOUT=50s",
			"SHELLDON_TELEGRAM_RETRY_MAX=1s",
			"SHELLDON_TELEGRAM_GIVE_UP_ATTEMPTS=5",
			"SHELLDON_TELEGRAM_GIVE_UP_AFTER=2h",
			"SHELLDON_TELEGRAM_VOICE_MAX_BYTES=2560KiB",
			"SHELLDON_TELEGRAM_PHOTO_MAX_BYTES=512KiB",
			"SHELLDON_TELEGRAM_PHOTO_MAX_SIDE=800",
			"SHELLDON_TELEGRAM_REACT=no",
		}, Telegram{Token: "987:" + strings.Repeat("b", 30), AllowedUsers: []int64{7, 8, 9}, APIURL: "https://bots.example",
			PollTimeout: Duration{50 * time.Second}, RetryMax: Duration{time.Second}, GiveUpAttempts: 5, GiveUpAfter: Duration{2 * time.Hour},
			VoiceMaxBytes: 2560 << 10, PhotoMaxBytes: 512 << 10, PhotoMaxSide: 800}},
		{"one user from the environment", "", []string{"SHELLDON_TELEGRAM_ALLOWED_USERS=42"},
			Telegram{AllowedUsers: []int64{42}, APIURL: "https://api.telegram.org", PollTimeout: Duration{30 * time.Second}, RetryMax: Duration{time.Minute},
				GiveUpAttempts: 20, GiveUpAfter: Duration{24 * time.Hour}, VoiceMaxBytes: 2 << 20, PhotoMaxBytes: 1 << 20, PhotoMaxSide: 1280, React: true}},
		{"empty variables count as unset", file, []string{"SHELLDON_TELEGRAM_ALLOWED_USERS=", "SHELLDON_TELEGRAM_TOKEN="}, fromFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(writeConfig(t, tt.file), tt.environ)
			if err != nil {
				t.Fatalf("Load error: %v", err)
			}
			if !reflect.DeepEqual(got.Telegram, tt.want) {
				t.Errorf("Telegram = %+v, want %+v", got.Telegram, tt.want)
			}
		})
	}
}

func TestTelegramValidation(t *testing.T) {
	tests := []struct {
		name, file string
		environ    []string
		want       []string // nil: valid
	}{
		{"valid", "[telegram]\ntoken = \"" + validToken + "\"\nallowed_users = [1, 9007199254740991]\napi_url = \"http://127.0.0.1:8081/\"\n", nil, nil},
		{"short token", "[telegram]\ntoken = \"123:abc\"\n", nil,
			[]string{"telegram.token: the value (7 characters) does not look like a token from @BotFather", "/etc/shelldon/telegram/token"}},
		{"token without the bot id", "[telegram]\ntoken = \"" + strings.Repeat("x", 40) + "\"\n", nil,
			[]string{"telegram.token: the value (40 characters) does not look like a token"}},
		{"token with a space", "[telegram]\ntoken = \"123456789:" + strings.Repeat("x", 30) + " \"\n", nil,
			[]string{"telegram.token: the value (41 characters)"}},
		{"token from the environment with a newline", "", []string{"SHELLDON_TELEGRAM_TOKEN=" + validToken + "\n"},
			[]string{"config environment: telegram.token: the value (" + strconv.Itoa(len(validToken)+1) + " characters)"}},
		{"token counted in characters", "[telegram]\ntoken = \"1:ééé\"\n", nil,
			[]string{"the value (5 characters)"}},
		{"zero user", "[telegram]\nallowed_users = [42, 0]\n", nil,
			[]string{"telegram.allowed_users: element 1, 0, is not a Telegram user id; message @userinfobot on Telegram to learn your numeric id"}},
		{"negative user from the environment", "", []string{"SHELLDON_TELEGRAM_ALLOWED_USERS=-5"},
			[]string{"config environment: telegram.allowed_users: element 0, -5, is not a Telegram user id"}},
		{"empty api_url", "[telegram]\napi_url = \"\"\n", nil,
			[]string{"telegram.api_url: is empty", `like "https://api.telegram.org" (the default)`}},
		{"api_url not http", "[telegram]\napi_url = \"ftp://h\"\n", nil, []string{`telegram.api_url: "ftp://h" is not an http or https URL`}},
		{"api_url without host", "[telegram]\napi_url = \"https://\"\n", nil, []string{"telegram.api_url: ", "has no host"}},
		{"api_url with credentials", "[telegram]\napi_url = \"https://u:pw@h\"\n", nil, []string{"telegram.api_url: ", "holds credentials", "remove them"}},
		{"api_url with a query", "[telegram]\napi_url = \"https://h/?x=1\"\n", nil, []string{"telegram.api_url: has a query"}},
		{"api_url with a fragment", "[telegram]\napi_url = \"https://h/#\"\n", nil, []string{"telegram.api_url: has a query (?…) or a fragment"}},
		{"poll too short", "[telegram]\npoll_timeout = \"0s\"\n", nil, []string{"telegram.poll_timeout: 0s is out of range; use 1s to 50s (default 30s)"}},
		{"poll too long", "", []string{"SHELLDON_TELEGRAM_POLL_TIMEOUT=51s"}, []string{"config environment: telegram.poll_timeout: 51s is out of range"}},
		{"retry too short", "[telegram]\nretry_max = \"500ms\"\n", nil, []string{"telegram.retry_max: 500ms is out of range; use 1s to 10m0s (default 1m0s)"}},
		{"retry too long", "[telegram]\nretry_max = \"11m\"\n", nil, []string{"telegram.retry_max: 11m0s is out of range"}},
		{"voice note over Telegram's limit", "[telegram]\nvoice_max_bytes = \"21MiB\"\n", nil,
			[]string{"telegram.voice_max_bytes: 21MiB is out of range; use 16KiB to 20MiB (default 2MiB)"}},
		{"voice note larger than the bus's frame", "[telegram]\nvoice_max_bytes = \"20MiB\"\n", nil,
			[]string{"telegram.voice_max_bytes: 20MiB does not fit through the bus", "base64 (27307KiB)", "lower it to at most 2688KiB, or raise bus.max_frame to at least 28MiB"}},
		{"voice note fits a larger frame", "[bus]\nmax_frame = \"28MiB\"\n[telegram]\nvoice_max_bytes = \"20MiB\"\n", nil, nil},
		{"photo larger than a small frame", "", []string{"SHELLDON_BUS_MAX_FRAME=1MiB"},
			[]string{"config environment: telegram.photo_max_bytes: 1MiB does not fit through the bus", "lower it to at most 384KiB",
				"telegram.voice_max_bytes: 2MiB does not fit"}},
		{"photo too small", "[telegram]\nphoto_max_bytes = 100\n", nil, []string{"telegram.photo_max_bytes: 100 is out of range"}},
		{"photo side past Telegram's largest", "[telegram]\nphoto_max_side = 4000\n", nil,
			[]string{"telegram.photo_max_side: 4000 is out of range; use 90 to 2560 (default 1280)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tt.file), tt.environ)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load = %v, want nil", err)
				}
				return
			}
			wantError(t, err, tt.want...)
		})
	}
}

// A token is a secret: no error may show it, however it is mistyped.
func TestTelegramTokenNeverShown(t *testing.T) {
	const secret = "ZqXwPkRmTb" // no digits: the decoder quotes a run of letters whole
	tests := []struct {
		name, file string
		environ    []string
		key        string
	}{
		{"too short", "[telegram]\ntoken = \"1:" + secret + "\"\n", nil, "telegram.token"},
		{"no bot id", "[telegram]\ntoken = \"" + secret + secret + secret + "\"\n", nil, "telegram.token"},
		{"bad character", "[telegram]\ntoken = \"1:" + secret + secret + secret + "!\"\n", nil, "telegram.token"},
		{"unquoted", "[telegram]\ntoken = " + secret + secret + secret + "\n", nil, "telegram.token"},
		{"unquoted with the bot id", "[telegram]\ntoken = 123:" + secret + secret + secret + "\n", nil, "telegram.token"},
		{"bad escape", "[telegram]\ntoken = \"1:" + secret + `\q` + secret + "\"\n", nil, "telegram.token"},
		{"unquoted provider key", "[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\napi_key = " + secret + "\n", nil, "provider.api_key"},
		{"from the environment", "", []string{"SHELLDON_TELEGRAM_TOKEN=" + secret}, "telegram.token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tt.file), tt.environ)
			wantError(t, err, tt.key+": ")
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("Load error %q shows the secret", err)
			}
		})
	}
}

// credentialsDir makes a $CREDENTIALS_DIRECTORY holding files, and returns
// its environment.
func credentialsDir(t *testing.T, files map[string]string) []string {
	t.Helper()
	dir := t.TempDir()
	for name, contents := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"CREDENTIALS_DIRECTORY=" + dir}
}

func TestBotToken(t *testing.T) {
	unreadable := credentialsDir(t, nil)
	// A directory where the file should be cannot be read, even by root.
	if err := os.Mkdir(filepath.Join(strings.TrimPrefix(unreadable[0], "CREDENTIALS_DIRECTORY="), TelegramCredential), 0o700); err != nil {
		t.Fatal(err)
	}
	fix := []string{"/etc/shelldon/telegram/token", "mode 0600", "restart shelldon", "telegram.token", "SHELLDON_TELEGRAM_TOKEN"}
	tests := []struct {
		name     string
		telegram Telegram
		environ  []string
		want     string
		wantOK   bool
		wantErr  []string
	}{
		{"token", Telegram{Token: validToken}, nil, validToken, true, nil},
		{"token wins over the credential", Telegram{Token: validToken}, credentialsDir(t, map[string]string{TelegramCredential: "other\n"}), validToken, true, nil},
		{"credential", Telegram{}, credentialsDir(t, map[string]string{TelegramCredential: validToken + "\n"}), validToken, true, nil},
		{"credential with CRLF", Telegram{}, credentialsDir(t, map[string]string{TelegramCredential: validToken + "\r\n"}), validToken, true, nil},
		{"no credentials directory", Telegram{}, nil, "", false, nil},
		{"empty credentials directory variable", Telegram{}, []string{"CREDENTIALS_DIRECTORY="}, "", false, nil},
		{"no credential file", Telegram{}, credentialsDir(t, map[string]string{"keys_openrouter": "sk"}), "", false, nil},
		{"empty credential file", Telegram{}, credentialsDir(t, map[string]string{TelegramCredential: ""}), "", false,
			append([]string{"config environment: telegram.token: credential file ", TelegramCredential + " is empty"}, fix...)},
		{"credential file of a newline", Telegram{}, credentialsDir(t, map[string]string{TelegramCredential: "\n"}), "", false, []string{"is empty"}},
		{"unreadable credential file", Telegram{}, unreadable, "", false, append([]string{"cannot read the credential"}, fix...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := tt.telegram.BotToken(tt.environ)
			if tt.wantErr != nil {
				wantError(t, err, tt.wantErr...)
				return
			}
			if err != nil || got != tt.want || ok != tt.wantOK {
				t.Errorf("BotToken(%q) = %q, %v, %v, want %q, %v, nil", tt.environ, got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
}

func TestTelegramCheck(t *testing.T) {
	withCredential := credentialsDir(t, map[string]string{TelegramCredential: validToken + "\n"})
	tests := []struct {
		name        string
		telegram    Telegram
		environ     []string
		wantEnabled bool
		wantErr     []string
	}{
		{"off", Telegram{AllowedUsers: []int64{42}}, nil, false, nil},
		{"off without users", Telegram{}, credentialsDir(t, nil), false, nil},
		{"token and users", Telegram{Token: validToken, AllowedUsers: []int64{42}}, nil, true, nil},
		{"credential and users", Telegram{AllowedUsers: []int64{42, 43}}, withCredential, true, nil},
		// Without users the bot waits to be paired (shelldon pair).
		{"token without users", Telegram{Token: validToken}, nil, true, nil},
		{"credential without users", Telegram{AllowedUsers: []int64{}}, withCredential, true, nil},
		{"empty credential", Telegram{AllowedUsers: []int64{42}}, credentialsDir(t, map[string]string{TelegramCredential: ""}), false, []string{"is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enabled, err := tt.telegram.Check(tt.environ)
			if enabled != tt.wantEnabled {
				t.Errorf("Check(%q) enabled = %v, want %v", tt.environ, enabled, tt.wantEnabled)
			}
			if tt.wantErr != nil {
				wantError(t, err, tt.wantErr...)
				return
			}
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", tt.environ, err)
			}
		})
	}
}

func TestPanelValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Panel)
		want string
	}{
		{"unknown display", func(p *Panel) { p.Display = "lcd" }, `panel.display: "lcd" is not a display shelldon knows`},
		{"relative png path", func(p *Panel) { p.PNGPath = "panel.png" }, `panel.png_path: "panel.png" is not an absolute path`},
		{"no partials", func(p *Panel) { p.FullEvery = 0 }, "panel.full_every"},
		{"full refresh too often", func(p *Panel) { p.FullAfter.Duration = time.Second }, "panel.full_after"},
		{"sleep too soon", func(p *Panel) { p.SleepAfter.Duration = time.Second }, "panel.sleep_after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c.Panel)
			err := c.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("the default panel settings do not validate: %v", err)
	}
}

func TestMoodAndScheduleValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"tick too quick", func(c *Config) { c.Mood.Tick.Duration = time.Second }, "mood.tick"},
		{"night unreadable", func(c *Config) { c.Mood.Night = "late" }, "mood.night"},
		{"night out of the day", func(c *Config) { c.Mood.Night = "25:00-07:00" }, "mood.night"},
		{"lonely negative", func(c *Config) { c.Mood.Lonely.Duration = -time.Hour }, "mood.lonely"},
		{"budget too big", func(c *Config) { c.Schedule.DailyBudget = 1000 }, "schedule.daily_budget"},
		{"budget negative", func(c *Config) { c.Schedule.DailyBudget = -1 }, "schedule.daily_budget"},
		{"cooldown too long", func(c *Config) { c.Schedule.Cooldown.Duration = 24 * time.Hour }, "schedule.cooldown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error about %s", err, tc.want)
			}
		})
	}
	c := Default()
	c.Mood.Night, c.Schedule.DailyBudget, c.Mood.Lonely.Duration = "", 0, 0
	if err := c.Validate(); err != nil {
		t.Errorf("no night, no budget, never lonely: %v, want valid", err)
	}
}

func TestParseBool(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
		ok   bool
	}{
		{"true", true, true}, {"TRUE", true, true}, {"1", true, true}, {"yes", true, true},
		{"false", false, true}, {"0", false, true}, {"no", false, true}, {" false ", false, true},
		{"upside", false, false}, {"2", false, false},
	} {
		got, err := parseBool(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("parseBool(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "write true or false") {
			t.Errorf("parseBool(%q) error %q does not say what to write", tc.in, err)
		}
	}
}

// TestProviderMediaKeys: a provider marked vision takes the owner's
// photos, one with a transcription model their voice notes; a chain
// without either has neither.
func TestProviderMediaKeys(t *testing.T) {
	tests := []struct {
		file              string
		sees, transcribes bool
	}{
		{"[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\n", false, false},
		{"[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\n[[provider]]\nname = \"b\"\nbase_url = \"http://h\"\nmodel = \"m\"\nvision = true\ntranscription_model = \"whisper-1\"\n", true, true},
		{"[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\ntranscription_model = \"whisper-1\"\n", false, true},
	}
	for _, tt := range tests {
		cfg, err := Load(writeConfig(t, tt.file), nil)
		if err != nil {
			t.Fatalf("Load(%q): %v", tt.file, err)
		}
		if cfg.Sees() != tt.sees || cfg.Transcribes() != tt.transcribes {
			t.Errorf("Load(%q): Sees() = %v, Transcribes() = %v, want %v, %v", tt.file, cfg.Sees(), cfg.Transcribes(), tt.sees, tt.transcribes)
		}
	}
	if _, err := Load(writeConfig(t, "[[provider]]\nname = \"a\"\nbase_url = \"http://h\"\nmodel = \"m\"\nvision = \"yes\"\n"), nil); err == nil || !strings.Contains(err.Error(), "true or false") {
		t.Errorf("Load(vision = \"yes\") = %v, want an error asking for true or false", err)
	}
}
