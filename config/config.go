package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is everything shelldon reads from its configuration file.
type Config struct {
	// StateDir holds the database, the memory tree and the workspace. Load
	// makes it absolute, resolving a relative path against the working
	// directory.
	StateDir string `toml:"state_dir"`
	// Socket is core's bus socket. Unset in the file and the environment,
	// Load derives it as <state_dir>/bus.sock.
	Socket    string     `toml:"socket"`
	Timeouts  Timeouts   `toml:"timeouts"`
	Turn      Turn       `toml:"turn"`
	Worker    Worker     `toml:"worker"`
	Bus       Bus        `toml:"bus"`
	Providers []Provider `toml:"provider"` // [[provider]] tables, tried in order
	Telegram  Telegram   `toml:"telegram"`
	Panel     Panel      `toml:"panel"`
	Mood      Mood       `toml:"mood"`
	Schedule  Schedule   `toml:"schedule"`
	Budget    Budget     `toml:"budget"`
	Sandbox   Sandbox    `toml:"sandbox"`
	MCP       []MCP      `toml:"mcp"` // [[mcp]] tables: the MCP servers the pet may use
}

// Timeouts bound one turn. They must keep 0 < Worker < Reap < Turn: the
// worker gives up on its own first, then systemd (or the launcher) kills
// whatever is left of it, and only then does core give up on the turn and
// degrade.
type Timeouts struct {
	Worker Duration `toml:"worker"` // the worker's own completion budget
	Reap   Duration `toml:"reap"`   // RuntimeMaxSec of the turn unit; the kill
	Turn   Duration `toml:"turn"`   // core closes the fence and degrades
	// StopGrace is how long a stopping core lets the turn in flight go
	// on, so that one almost done still answers; what it leaves, the next
	// start takes up. Bounded so that it and the reap of the worker stay
	// inside the unit's TimeoutStopSec.
	StopGrace Duration `toml:"stop_grace"`
}

// Turn shapes what one turn sees and shows.
type Turn struct {
	HistoryMessages int      `toml:"history_messages"` // recent messages sent to the worker
	ReactionDwell   Duration `toml:"reaction_dwell"`   // how long the reaction face is held
	// ApprovalExpiry is how long a parked RISKY call waits for the owner.
	ApprovalExpiry Duration `toml:"approval_expiry"`
	// ToolStrikes is how many failures put a self-coded tool in
	// quarantine.
	ToolStrikes int `toml:"tool_strikes"`
	// RuleDays is how many days a rule the owner grants ("Always for …")
	// lets its calls through before it expires.
	RuleDays int `toml:"rule_days"`
	// MaxModelCalls caps the model calls of one turn: a model that keeps
	// calling tools is stopped there, and the owner told so.
	MaxModelCalls int `toml:"max_model_calls"`
	// WorkerCommand runs a worker; empty means shelldon-worker from the
	// directory of the running shelldon binary.
	WorkerCommand []string `toml:"worker_command"`
}

// Worker limits a turn's worker: as rlimits where it runs as a plain
// child process, and also as its unit's cgroup limits under systemd.
type Worker struct {
	MemoryLimit Size `toml:"memory_limit"` // RLIMIT_DATA; the unit's MemoryMax
	CPUSeconds  int  `toml:"cpu_seconds"`  // RLIMIT_CPU; at least timeouts.reap
	OpenFiles   int  `toml:"open_files"`   // RLIMIT_NOFILE
	// User runs the worker's unit under systemd; empty runs it as root.
	// A user that does not exist is logged and the unit runs as root.
	User string `toml:"user"`
}

// Bus tunes core's Unix-socket bus.
type Bus struct {
	// AllowedUIDs may connect besides root, core's own uid and the members
	// of the state directory's group.
	AllowedUIDs []int `toml:"allowed_uids"`
	// BrokerUsers may be the broker, which hears every prompt, and
	// TransportUsers a transport, which speaks for the owner, besides root
	// and core's own user: user names, or uids written as numbers. A name
	// the host does not know is skipped (and logged) at start.
	BrokerUsers    []string `toml:"broker_users"`
	TransportUsers []string `toml:"transport_users"`
	QueueLength    int      `toml:"queue_length"` // per-connection send queue, in envelopes
	MaxFrame       Size     `toml:"max_frame"`    // largest envelope on the wire
}

// Provider is one OpenAI-compatible chat-completions endpoint in the chain.
type Provider struct {
	Name    string `toml:"name"`
	BaseURL string `toml:"base_url"`
	Model   string `toml:"model"`
	// APIKey is the key itself; prefer APIKeyCredential, which keeps it
	// out of the file.
	APIKey string `toml:"api_key"`
	// APIKeyCredential names a file in $CREDENTIALS_DIRECTORY (systemd
	// LoadCredential=) that holds the key.
	APIKeyCredential string `toml:"api_key_credential"`
	// Timeout bounds one call. Zero means timeouts.worker; Load fills it in.
	Timeout Duration `toml:"timeout"`
	// from is the file that configured the provider, for the errors
	// about its values that only show later (Key); "" when Load did not
	// read it from a file.
	from string
	// Vision marks a model that takes images: the owner's photos go to
	// the first provider so marked.
	Vision bool `toml:"vision"`
	// TranscriptionModel is the model of the endpoint's
	// /audio/transcriptions ("whisper-1"); the owner's voice notes go to
	// the first provider that has one. Empty: it transcribes nothing.
	TranscriptionModel string `toml:"transcription_model"`
	// Stream asks the provider to stream its answers, so the owner sees
	// a reply grow as the model writes it; nil (left out) means on. A
	// provider that refuses to stream is answered whole all the same.
	Stream *bool `toml:"stream"`
	// PricePromptPerMillion and PriceCompletionPerMillion are what the
	// provider charges for a million prompt and completion tokens, in
	// the owner's currency (budget.currency), for the cost estimate in
	// /status; 0 when the owner set no price.
	PricePromptPerMillion     float64 `toml:"price_prompt_per_million"`
	PriceCompletionPerMillion float64 `toml:"price_completion_per_million"`
}

// Streams reports whether the provider is asked to stream its answers:
// unless stream = false.
func (p Provider) Streams() bool { return p.Stream == nil || *p.Stream }

// Transcribes reports whether some provider turns voice notes into text.
func (c Config) Transcribes() bool {
	return slices.ContainsFunc(c.Providers, func(p Provider) bool { return p.TranscriptionModel != "" })
}

// Sees reports whether some provider takes the owner's photos.
func (c Config) Sees() bool {
	return slices.ContainsFunc(c.Providers, func(p Provider) bool { return p.Vision })
}

// Telegram is the owner's Telegram bot, which core's Telegram transport
// runs. It is off unless [Telegram.BotToken] finds a token.
type Telegram struct {
	// Token is the bot token from @BotFather. Prefer the credential
	// [TelegramCredential], which keeps it out of the file.
	Token string `toml:"token"`
	// AllowedUsers are the numeric Telegram user ids that may chat and tap
	// buttons; everyone else is ignored.
	AllowedUsers []int64 `toml:"allowed_users"`
	// APIURL is the Bot API server; tests and self-hosted Bot API servers
	// change it.
	APIURL      string   `toml:"api_url"`
	PollTimeout Duration `toml:"poll_timeout"` // how long one long poll for updates waits
	// RetryMax is the longest wait between retries after network errors.
	RetryMax Duration `toml:"retry_max"`
	// GiveUpAttempts and GiveUpAfter bound how long one reply is tried:
	// past either it is dropped, logged, and the owner told once
	// Telegram takes their messages again.
	GiveUpAttempts int      `toml:"give_up_attempts"` // failures Telegram answered
	GiveUpAfter    Duration `toml:"give_up_after"`    // since the reply was queued
	// VoiceMaxBytes bounds a voice note or audio file taken for
	// transcription, PhotoMaxBytes and PhotoMaxSide the size of a photo
	// taken for a vision model (the largest of Telegram's sizes within
	// both). Each crosses the bus in one frame, so each must fit in
	// bus.max_frame, base64, with room to spare.
	VoiceMaxBytes Size `toml:"voice_max_bytes"`
	PhotoMaxBytes Size `toml:"photo_max_bytes"`
	PhotoMaxSide  int  `toml:"photo_max_side"` // pixels, the longer side
	// React sets 👀 on the owner's message once core has kept it, where
	// the Bot API lets the bot react.
	React bool `toml:"react"`
}

// Panel is the e-ink face `shelldon panel` drives.
type Panel struct {
	// Display is where frames go: "auto" (the Waveshare display if it
	// answers, else the PNG file), "waveshare", "png" or "terminal".
	Display string `toml:"display"`
	// PNGPath is the PNG file's path, replaced atomically on each frame.
	PNGPath string `toml:"png_path"`
	// FullEvery forces a full refresh after this many partial ones, and
	// FullAfter once the last full refresh is this old: partial refreshes
	// leave ghosts that only a full one clears.
	FullEvery int      `toml:"full_every"`
	FullAfter Duration `toml:"full_after"`
	// SleepAfter puts the display to sleep once nothing changed for this
	// long; the next change wakes it.
	SleepAfter Duration `toml:"sleep_after"`
	// UpsideDown turns the Waveshare display's frames by 180°, for a HAT
	// mounted with its connector at the top. The PNG file and the
	// terminal are drawn the right way up whatever it says.
	UpsideDown bool `toml:"upside_down"`
}

// Mood is how the pet's mood drifts between turns.
type Mood struct {
	// Tick is the reflex: how often the mood drifts on its own.
	Tick Duration `toml:"tick"`
	// Night is when the pet sleeps, as "23:00-07:00" in local time;
	// empty for never.
	Night string `toml:"night"`
	// Lonely is how long without a chat makes the pet bored (three times
	// as long, sad); 0 for never.
	Lonely Duration `toml:"lonely"`
}

// Schedule bounds the turns the pet starts itself (reminders, check-ins).
type Schedule struct {
	// DailyBudget is how many such turns may start a day (reset at local
	// midnight); 0 turns them off.
	DailyBudget int `toml:"daily_budget"`
	// Cooldown is the least time between two of them.
	Cooldown Duration `toml:"cooldown"`
	// DailyTokenBudget stops them for the day once today's turns, all of
	// them, used this many tokens; 0 for no such bound.
	DailyTokenBudget int `toml:"daily_token_budget"`
}

// Budget bounds what the pet spends on its model, and says in what.
type Budget struct {
	// DailyTokenCap makes a turn of the owner's messages ask the owner
	// first once today's turns used this many tokens; 0 for no cap.
	DailyTokenCap int `toml:"daily_token_cap"`
	// Currency names the owner's currency, the one the providers' prices
	// are in, for the cost estimate: "USD", "€"; "" shows bare numbers.
	Currency string `toml:"currency"`
}

// Sandbox bounds the commands the pet runs, each in a container of its
// own.
type Sandbox struct {
	// Disk is what one command may write in all: the workspace's
	// changes, /tmp and /var/tmp. It is held in memory while the command
	// runs and counts against the command's memory limit too.
	Disk Size `toml:"disk"`
	// User is the unprivileged user every command's container has for
	// its root on the host; empty runs commands as the workspace's owner
	// (root on a board, capabilities dropped). A user that does not exist
	// is logged and commands run so.
	User string `toml:"user"`
}

// The displays a panel can drive.
var PanelDisplays = []string{"auto", "waveshare", "png", "terminal"}

// Default is the configuration used for every key the file and the
// environment leave unset.
func Default() Config {
	const stateDir = "/var/lib/shelldon"
	return Config{
		StateDir: stateDir,
		Socket:   defaultSocket(stateDir),
		Timeouts: Timeouts{
			Worker:    Duration{25 * time.Second},
			Reap:      Duration{28 * time.Second},
			Turn:      Duration{30 * time.Second},
			StopGrace: Duration{10 * time.Second},
		},
		Turn: Turn{
			HistoryMessages: 12,
			ReactionDwell:   Duration{60 * time.Second},
			ApprovalExpiry:  Duration{time.Hour},
			ToolStrikes:     3,
			RuleDays:        30,
			MaxModelCalls:   8,
		},
		Worker: Worker{
			MemoryLimit: 256 << 20,
			CPUSeconds:  30,
			OpenFiles:   64,
			User:        "shelldon-worker",
		},
		Bus: Bus{
			BrokerUsers: []string{"shelldon-broker"},
			QueueLength: 256,
			MaxFrame:    4 << 20,
		},
		Telegram: Telegram{
			APIURL:         "https://api.telegram.org",
			PollTimeout:    Duration{30 * time.Second},
			RetryMax:       Duration{time.Minute},
			GiveUpAttempts: 20,
			GiveUpAfter:    Duration{24 * time.Hour},
			VoiceMaxBytes:  2 << 20,
			PhotoMaxBytes:  1 << 20,
			PhotoMaxSide:   1280,
			React:          true,
		},
		Panel: Panel{
			Display:    "auto",
			PNGPath:    "/run/shelldon/panel.png",
			FullEvery:  20,
			FullAfter:  Duration{time.Hour},
			SleepAfter: Duration{2 * time.Minute},
		},
		Mood: Mood{
			Tick:   Duration{5 * time.Minute},
			Night:  "23:00-07:00",
			Lonely: Duration{3 * time.Hour},
		},
		Schedule: Schedule{
			DailyBudget: 12,
			Cooldown:    Duration{5 * time.Minute},
		},
		Sandbox: Sandbox{
			Disk: 128 << 20,
			User: "shelldon-sandbox",
		},
	}
}

func defaultSocket(stateDir string) string { return filepath.Join(stateDir, "bus.sock") }

// Load reads the configuration: the defaults, then the file at path (none
// when path is empty), then the SHELLDON_ variables in environ (a list of
// "NAME=value", as os.Environ returns). It fills in derived values and
// validates the result. Every error about the configuration wraps
// [ErrInvalid] and says what to change.
func Load(path string, environ []string) (Config, error) {
	c := Default()
	c.Socket = "" // derived below from the final state_dir unless something sets it
	o := newOrigins(path)
	if path != "" {
		if err := decodeFile(path, &c, &o); err != nil {
			return Config{}, err
		}
	}
	if err := applyEnvironment(&c, environ, &o); err != nil {
		return Config{}, err
	}
	if err := c.resolve(); err != nil {
		return Config{}, err
	}
	if err := c.validate(o); err != nil {
		return Config{}, err
	}
	return c, nil
}

// resolve fills in what Load derives: absolute paths, the socket, each
// provider's timeout and what each MCP server's table leaves out.
func (c *Config) resolve() error {
	for _, p := range []*string{&c.StateDir, &c.Socket} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("config: make %q absolute: %w", *p, err)
		}
		*p = abs
	}
	if c.Socket == "" && c.StateDir != "" {
		c.Socket = defaultSocket(c.StateDir)
	}
	for i := range c.Providers {
		if c.Providers[i].Timeout.Duration == 0 {
			c.Providers[i].Timeout = c.Timeouts.Worker
		}
	}
	for i := range c.MCP {
		c.MCP[i] = c.MCP[i].WithDefaults()
	}
	return nil
}

// decodeFile decodes the file at path over c, refusing unknown keys, and
// records in o which keys it set.
func decodeFile(path string, c *Config, o *origins) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &configError{source: path, problem: "no such file", cause: err,
			fix: "create it by copying config/shelldon.example.toml from the shelldon source (every key with its default), or start without a config file to use the defaults"}
	}
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	md, err := toml.Decode(string(data), c)
	if err != nil {
		return decodeError(path, err)
	}
	for i := range c.Providers {
		c.Providers[i].from = path
	}
	// MetaData.Undecoded is not enough: the decoder matches a key to a field
	// ignoring case, so "Timeouts.Worker" decodes silently. Every key must
	// match a known one exactly.
	var errs []error
	reported := map[string]bool{}
	for _, key := range md.Keys() {
		path := key.String()
		o.fromFile[path] = true
		if _, known := settingFor(path); known || reported[path] || underReported(key, reported) {
			continue
		}
		reported[path] = true
		source := o.file
		if line := keyLine(string(data), &md, key); line > 0 {
			source = fmt.Sprintf("%s:%d", o.file, line)
		}
		errs = append(errs, unknownKeyError(source, path))
	}
	return errors.Join(errs...)
}

// keyLine finds the line of key in data, which md describes, or 0. The
// decoder knows every key's position but tells it only in its errors, so
// data is decoded again into a type holding nothing but key, whose value
// refuses itself: the decoder's error then carries the line.
func keyLine(data string, md *toml.MetaData, key toml.Key) int {
	typ := reflect.TypeFor[linePin]()
	for i := len(key) - 1; i >= 0; i-- {
		if i < len(key)-1 && md.Type(key[:i+1]...) == "ArrayHash" {
			typ = reflect.SliceOf(typ) // [[provider]]: an array of tables
		}
		typ = reflect.StructOf([]reflect.StructField{{Name: "F", Type: typ, Tag: reflect.StructTag("toml:" + strconv.Quote(key[i]))}})
	}
	var pinned toml.ParseError
	if _, err := toml.Decode(data, reflect.New(typ).Interface()); errors.As(err, &pinned) {
		return pinned.Position.Line
	}
	return 0
}

// linePin is the value keyLine decodes a key into: it refuses whatever
// the key holds, so that the decoder says where the key is.
type linePin struct{}

// errPinned is linePin's refusal.
var errPinned = errors.New("pinned")

// UnmarshalTOML implements [toml.Unmarshaler].
func (linePin) UnmarshalTOML(any) error { return errPinned }

// underReported tells whether a table holding key was already reported as
// unknown, so only the outermost unknown key is.
func underReported(key toml.Key, reported map[string]bool) bool {
	for i := 1; i < len(key); i++ {
		if reported[key[:i].String()] {
			return true
		}
	}
	return false
}

// typeMismatch matches the decoder's errors for a value of the wrong type,
// which, unlike syntax errors, are not toml.ParseError values:
// `toml: line 3 (last key "turn.history_messages"): incompatible types: ...`.
var typeMismatch = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key ("(?:[^"\\]|\\.)*")\): (.*)$`)
})

// tomlTypeNames turns the decoder's Go type names into TOML's words.
var tomlTypeNames = map[string]string{
	"string": "a string", "int64": "an integer", "float64": "a float", "bool": "a boolean",
	"map[string]any": "a table", "[]any": "an array", "[]map[string]any": "an array of tables",
	"time.Time": "a date-time",
}

// wrongType finds the TOML type of the value in the decoder's two wordings
// of a type mismatch.
var wrongType = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:incompatible types: TOML value has type (\S+);|type mismatch for .*: expected .* but found (\S+)$)`)
})

// decodeError rewords a decoder error as "config <file>:<line>: <key>: ...".
func decodeError(path string, err error) error {
	var parseErr toml.ParseError
	if errors.As(err, &parseErr) {
		key := parseErr.LastKey
		if key == "" {
			key = "syntax"
		}
		source := fmt.Sprintf("%s:%d", path, parseErr.Position.Line)
		// The decoder quotes the text it choked on, which here is the secret.
		if s, known := settingFor(key); known && s.secret {
			return &configError{source: source, key: key, problem: "the value is not valid TOML (not shown: it is a secret)",
				fix: "write " + s.hint + ", in double quotes on one line"}
		}
		return &configError{source: source, key: key, problem: parseErr.Message, cause: err}
	}
	m := typeMismatch().FindStringSubmatch(err.Error())
	if m == nil {
		return &configError{source: path, problem: err.Error(), cause: err}
	}
	source := path
	if m[1] != "" {
		source += ":" + m[1]
	}
	key, unquoteErr := strconv.Unquote(m[2])
	if unquoteErr != nil {
		key = m[2]
	}
	problem := m[3]
	if t := wrongType().FindStringSubmatch(problem); t != nil {
		found := t[1] + t[2]
		if name, ok := tomlTypeNames[found]; ok {
			found = name
		}
		problem = "wrong type: the value is " + found
	}
	e := &configError{source: source, key: key, problem: problem, cause: err}
	if s, known := settingFor(key); known {
		e.fix = "write " + s.hint
	}
	return e
}
