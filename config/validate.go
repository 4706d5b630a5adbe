package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"shelldon/clock"
)

// maxSocketPath is the longest Unix socket path: sun_path holds 108 bytes,
// the last of which is the terminating NUL.
const maxSocketPath = 107

// Limits that are not simply "the default is sensible".
// userName is what systemd accepts in User= for a name: the portable
// subset, as useradd makes them.
var userName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`) })

const (
	maxHistoryMessages = 200
	maxReactionDwell   = time.Hour
	// maxStopGrace keeps a stopping core's grace, and then the reap of
	// its worker, inside the unit's TimeoutStopSec (30 s).
	maxStopGrace      = 15 * time.Second
	minApprovalExpiry = time.Minute
	maxApprovalExpiry = 7 * 24 * time.Hour
	// maxRuleDays bounds a granted rule's life: a permission nobody
	// looked at for a year is one nobody remembers giving.
	maxRuleDays          = 365
	minMemoryLimit       = 128 << 20
	minOpenFiles         = 16
	maxOpenFiles         = 4096
	minQueueLength       = 8
	maxQueueLength       = 65536
	minMaxFrame          = 64 << 10
	maxMaxFrame          = 64 << 20
	maxUID         int64 = math.MaxUint32 - 1 // (uid_t)-1 means "no uid"
)

// maxModelCalls bounds turn.max_model_calls: each call resends the whole
// conversation inside the turn's 25 s, and past a few dozen calls a turn
// is stuck, not working.
const maxModelCalls = 64

var providerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9-]+$`) })

// botToken is the shape of the tokens @BotFather hands out: the bot's id, a
// colon, then the secret.
var botToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+:[A-Za-z0-9_-]{30,}$`) })

// The bounds of the mood's drift and of the self-driven turns: a day's
// budget is the most turns the pet may start itself, each bounded by the
// turn's own timeouts and loop ceiling.
const (
	minMoodTick    = time.Minute
	maxMoodTick    = time.Hour
	maxLonely      = 7 * 24 * time.Hour
	maxDailyBudget = 100
	maxCooldown    = 6 * time.Hour
)

// The bounds of what the pet spends: a token bound beyond a billion a day
// bounds nothing, a price beyond ten thousand a million tokens is a typo,
// and a currency is a short name or sign.
const (
	maxDailyTokens     = 1_000_000_000
	maxPricePerMillion = 10_000
	maxCurrencyRunes   = 8
)

// The bounds of what one sandboxed command may write: below, not even a
// small git fetch fits; above, the limit stops limiting (it is memory).
const (
	minSandboxDisk = 16 << 20
	maxSandboxDisk = 16 << 30
)

// The bounds of the panel's refresh policy: a full refresh takes the
// panel about two seconds of flashing, a partial one leaves a little ghost.
const (
	maxFullEvery  = 1000
	minFullAfter  = time.Minute
	maxFullAfter  = 24 * time.Hour
	minSleepAfter = 10 * time.Second
	maxSleepAfter = 24 * time.Hour
)

// Telegram's limits on a long poll and the bounds of a sane retry wait.
const (
	minPollTimeout = time.Second
	maxPollTimeout = 50 * time.Second
	minRetryMax    = time.Second
	maxRetryMax    = 10 * time.Minute
)

// Validate reports every impossible value in c, joined; each error wraps
// [ErrInvalid]. Load calls it; call it yourself only on a Config you built.
func (c Config) Validate() error {
	o := newOrigins("")
	o.fallback = sourceInMemory
	return c.validate(o)
}

// problem is one finding of validate before it is worded with its source.
type problem struct {
	key          string
	about        []string // the keys whose values are at fault, for naming the source
	what, remedy string
}

func (c Config) validate(o origins) error {
	var found []problem
	add := func(key, what, remedy string, about ...string) {
		found = append(found, problem{key: key, about: append([]string{key}, about...), what: what, remedy: remedy})
	}
	def := Default()

	if c.StateDir == "" {
		add("state_dir", "is empty", fmt.Sprintf("set it to a directory, like %q", def.StateDir))
	}
	switch {
	case c.Socket == "":
		add("socket", "is empty", "leave it out to use <state_dir>/bus.sock")
	case len(c.Socket) > maxSocketPath:
		add("socket", fmt.Sprintf("%q is %d bytes, longer than the %d a Unix socket path may have", c.Socket, len(c.Socket), maxSocketPath),
			"choose a shorter state_dir, or set socket to a shorter path", "state_dir")
	}

	t := c.Timeouts
	if !(0 < t.Worker.Duration && t.Worker.Duration < t.Reap.Duration && t.Reap.Duration < t.Turn.Duration) {
		w, r, tt := suggestTimeouts(t.Turn.Duration)
		add("timeouts", fmt.Sprintf("worker %v, reap %v, turn %v break the rule 0 < worker < reap < turn", t.Worker, t.Reap, t.Turn),
			fmt.Sprintf("the worker must give up on its own before systemd (or the launcher) kills it at reap, and that must happen before core gives up on the turn and degrades; try worker = %q, reap = %q, turn = %q", w, r, tt),
			"timeouts.worker", "timeouts.reap", "timeouts.turn")
	}

	inRange(add, "timeouts.stop_grace", t.StopGrace.Duration, 0, maxStopGrace, def.Timeouts.StopGrace.Duration)

	inRange(add, "turn.history_messages", c.Turn.HistoryMessages, 0, maxHistoryMessages, def.Turn.HistoryMessages)
	inRange(add, "turn.reaction_dwell", c.Turn.ReactionDwell.Duration, 0, maxReactionDwell, def.Turn.ReactionDwell.Duration)
	inRange(add, "turn.approval_expiry", c.Turn.ApprovalExpiry.Duration, minApprovalExpiry, maxApprovalExpiry, def.Turn.ApprovalExpiry.Duration)
	inRange(add, "turn.tool_strikes", c.Turn.ToolStrikes, 1, 100, def.Turn.ToolStrikes)
	inRange(add, "turn.rule_days", c.Turn.RuleDays, 1, maxRuleDays, def.Turn.RuleDays)
	inRange(add, "turn.max_model_calls", c.Turn.MaxModelCalls, 1, maxModelCalls, def.Turn.MaxModelCalls)
	if len(c.Turn.WorkerCommand) > 0 && c.Turn.WorkerCommand[0] == "" {
		add("turn.worker_command", "its first element, the program, is empty",
			"name the program to run, or leave worker_command empty to run the shelldon-worker installed beside shelldon")
	}

	// 0 lifts the limit, for workers built with the race detector, which
	// reserves terabytes of shadow address space.
	if c.Worker.MemoryLimit != 0 && c.Worker.MemoryLimit < minMemoryLimit {
		add("worker.memory_limit", fmt.Sprintf("%v is too small", c.Worker.MemoryLimit),
			fmt.Sprintf("use at least %v (default %v): the Go runtime maps a 64MiB heap arena at start, so less cannot run a worker; or 0 for no limit", Size(minMemoryLimit), def.Worker.MemoryLimit))
	}
	if minCPU := max(1, int(math.Ceil(t.Reap.Seconds()))); c.Worker.CPUSeconds < minCPU {
		add("worker.cpu_seconds", fmt.Sprintf("%d is less than timeouts.reap (%v)", c.Worker.CPUSeconds, t.Reap),
			fmt.Sprintf("use at least %d so the CPU limit never kills a worker before reap does", minCPU), "timeouts.reap")
	}
	inRange(add, "worker.open_files", c.Worker.OpenFiles, minOpenFiles, maxOpenFiles, def.Worker.OpenFiles)
	if u := c.Worker.User; u != "" && !userName().MatchString(u) {
		add("worker.user", fmt.Sprintf("%q is not a user name", u),
			`use a system user's name, like "shelldon-worker", or "" for root`)
	}
	if u := c.Sandbox.User; u != "" && !userName().MatchString(u) {
		add("sandbox.user", fmt.Sprintf("%q is not a user name", u),
			`use an unprivileged system user's name, like "shelldon-sandbox", or "" to run commands as the workspace's owner`)
	}

	for i, uid := range c.Bus.AllowedUIDs {
		if uid < 0 || int64(uid) > maxUID {
			add("bus.allowed_uids", fmt.Sprintf("element %d, %d, is not a user id", i, uid),
				fmt.Sprintf("use numbers from 0 to %d, as `id -u USER` prints them", maxUID))
		}
	}
	c.Bus.validateUsers("bus.broker_users", c.Bus.BrokerUsers, add)
	c.Bus.validateUsers("bus.transport_users", c.Bus.TransportUsers, add)
	inRange(add, "bus.queue_length", c.Bus.QueueLength, minQueueLength, maxQueueLength, def.Bus.QueueLength)
	inRange(add, "bus.max_frame", c.Bus.MaxFrame, minMaxFrame, maxMaxFrame, def.Bus.MaxFrame)

	for i, p := range c.Providers {
		c.validateProvider(i, p, add)
	}
	c.Telegram.validate(def.Telegram, add)
	c.Telegram.validateMedia(c.Bus.MaxFrame, def.Telegram, add)
	c.Panel.validate(def.Panel, add)
	inRange(add, "mood.tick", c.Mood.Tick.Duration, minMoodTick, maxMoodTick, def.Mood.Tick.Duration)
	if _, err := clock.ParseWindow(c.Mood.Night); err != nil {
		add("mood.night", err.Error(), fmt.Sprintf("write the hours as %q, or \"\" for no night", def.Mood.Night))
	}
	inRange(add, "mood.lonely", c.Mood.Lonely.Duration, 0, maxLonely, def.Mood.Lonely.Duration)
	inRange(add, "schedule.daily_budget", c.Schedule.DailyBudget, 0, maxDailyBudget, def.Schedule.DailyBudget)
	inRange(add, "schedule.cooldown", c.Schedule.Cooldown.Duration, 0, maxCooldown, def.Schedule.Cooldown.Duration)
	inRange(add, "schedule.daily_token_budget", c.Schedule.DailyTokenBudget, 0, maxDailyTokens, def.Schedule.DailyTokenBudget)
	c.Budget.validate(def.Budget, add)
	inRange(add, "sandbox.disk", c.Sandbox.Disk, minSandboxDisk, maxSandboxDisk, def.Sandbox.Disk)
	c.validateMCP(add)

	errs := make([]error, len(found))
	for i, f := range found {
		errs[i] = &configError{source: o.source(f.about...), key: f.key, problem: f.what, fix: f.remedy}
	}
	return errors.Join(errs...)
}

// inRange adds a problem when got is outside lo..hi.
func inRange[T cmp.Ordered](add func(key, what, remedy string, about ...string), key string, got, lo, hi, def T) {
	if got < lo || got > hi {
		add(key, fmt.Sprintf("%v is out of range", got), fmt.Sprintf("use %v to %v (default %v)", lo, hi, def))
	}
}

// validateUsers checks a list of users who may take a bus role: each a
// user name or a uid written as a number. Whether a name exists is asked
// of the host at start, not here, so one configuration serves boards set
// up differently.
func (Bus) validateUsers(key string, users []string, add func(key, what, remedy string, about ...string)) {
	for i, u := range users {
		if userName().MatchString(u) {
			continue
		}
		if uid, err := strconv.ParseInt(u, 10, 64); err == nil && uid >= 0 && uid <= maxUID {
			continue
		}
		add(key, fmt.Sprintf("element %d, %q, is neither a user name nor a user id", i, u),
			fmt.Sprintf(`use a user's name, like "shelldon-broker", or its number from 0 to %d, as `+"`id -u USER`"+` prints it`, maxUID))
	}
}

func (c Config) validateProvider(i int, p Provider, add func(key, what, remedy string, about ...string)) {
	key := func(field string) string { return fmt.Sprintf("provider[%d].%s", i, field) }

	switch {
	case p.Name == "":
		add(key("name"), "is empty", `name every provider, with lower-case letters, digits and dashes, like "openrouter"`)
	case !providerName().MatchString(p.Name):
		add(key("name"), fmt.Sprintf("%q has characters other than a-z, 0-9 and -", p.Name), `use lower-case letters, digits and dashes, like "openrouter"`)
	default:
		for j, earlier := range c.Providers[:i] {
			if earlier.Name == p.Name {
				add(key("name"), fmt.Sprintf("%q is also the name of provider[%d]", p.Name, j), "give each provider its own name")
				break
			}
		}
	}

	if what, ok := badServerURL(p.BaseURL, "put the key in api_key_credential instead"); ok {
		add(key("base_url"), what, `write the endpoint's http or https address, like "https://openrouter.ai/api/v1" or "http://127.0.0.1:11434/v1"`)
	}
	if p.Model == "" {
		add(key("model"), "is empty", `name the model to ask, like "openai/gpt-4o-mini"`)
	}
	if p.APIKey != "" && p.APIKeyCredential != "" {
		add(key("api_key"), "is set together with api_key_credential", "keep only one; api_key_credential keeps the key out of this file")
	}
	if p.APIKeyCredential != "" && !validCredentialName(p.APIKeyCredential) {
		add(key("api_key_credential"), fmt.Sprintf("%q is not a file name", p.APIKeyCredential),
			`name the credential as in LoadCredential=NAME:PATH, like "openrouter-api-key", without slashes`)
	}
	for _, price := range []struct {
		field string
		value float64
	}{{"price_prompt_per_million", p.PricePromptPerMillion}, {"price_completion_per_million", p.PriceCompletionPerMillion}} {
		// NaN compares false both ways, so it is refused by name.
		if math.IsNaN(price.value) || price.value < 0 || price.value > maxPricePerMillion {
			add(key(price.field), fmt.Sprintf("%v is not a price", price.value),
				fmt.Sprintf("write what the provider charges for a million tokens in your currency, 0 to %d, like 0.15; leave it out for no cost estimate", maxPricePerMillion))
		}
	}
	switch {
	case p.Timeout.Duration < 0:
		add(key("timeout"), fmt.Sprintf("%v is negative", p.Timeout), "leave it out to use timeouts.worker")
	case p.Timeout.Duration > c.Timeouts.Worker.Duration && c.Timeouts.Worker.Duration > 0:
		add(key("timeout"), fmt.Sprintf("%v is longer than timeouts.worker (%v), by which the worker has given up", p.Timeout, c.Timeouts.Worker),
			"make it at most timeouts.worker, or leave it out to use timeouts.worker", "timeouts.worker")
	}
}

func (b Budget) validate(def Budget, add func(key, what, remedy string, about ...string)) {
	inRange(add, "budget.daily_token_cap", b.DailyTokenCap, 0, maxDailyTokens, def.DailyTokenCap)
	if n := utf8.RuneCountInString(b.Currency); n > maxCurrencyRunes || !utf8.ValidString(b.Currency) ||
		strings.ContainsFunc(b.Currency, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		add("budget.currency", fmt.Sprintf("%q is not a currency's name", b.Currency),
			fmt.Sprintf(`write its code or sign, at most %d characters and no spaces, like "USD" or "€"; or "" for bare numbers`, maxCurrencyRunes))
	}
}

func (t Telegram) validate(def Telegram, add func(key, what, remedy string, about ...string)) {
	// The token is a secret: say how long it is, never what it is.
	if t.Token != "" && !botToken().MatchString(t.Token) {
		add("telegram.token", fmt.Sprintf("the value (%d characters) does not look like a token from @BotFather", utf8.RuneCountInString(t.Token)),
			"a bot token is digits, a colon, then at least 30 letters, digits, - or _; copy it again from @BotFather, and better put it in /etc/shelldon/telegram/token (mode 0600) than in telegram.token")
	}
	for i, id := range t.AllowedUsers {
		if id <= 0 {
			add("telegram.allowed_users", fmt.Sprintf("element %d, %d, is not a Telegram user id", i, id),
				"message @userinfobot on Telegram to learn your numeric id")
		}
	}
	if what, ok := badServerURL(t.APIURL, "remove them"); ok {
		add("telegram.api_url", what, fmt.Sprintf("write the Bot API server's http or https address, like %q (the default)", def.APIURL))
	}
	inRange(add, "telegram.poll_timeout", t.PollTimeout.Duration, minPollTimeout, maxPollTimeout, def.PollTimeout.Duration)
	inRange(add, "telegram.retry_max", t.RetryMax.Duration, minRetryMax, maxRetryMax, def.RetryMax.Duration)
	inRange(add, "telegram.give_up_attempts", t.GiveUpAttempts, 1, 1000, def.GiveUpAttempts)
	inRange(add, "telegram.give_up_after", t.GiveUpAfter.Duration, time.Minute, 7*24*time.Hour, def.GiveUpAfter.Duration)
}

// The bounds of the media the Telegram transport takes: Telegram lets a
// bot download files of 20 MB at most, and sends photos of 90 to 2560
// pixels a side.
const (
	minMediaBytes = 16 << 10
	maxMediaBytes = 20 << 20
	minPhotoSide  = 90
	maxPhotoSide  = 2560
	// mediaFrameRoom is what a frame carrying a voice note or a photo
	// holds besides it: the envelope, and for a photo the turn's text
	// (64 KiB at most), its history (96 KiB) and the self-coded tools.
	mediaFrameRoom = 512 << 10
)

// Base64Size is how many bytes n bytes take in the bus's JSON: base64.
func Base64Size(n Size) Size { return (n + 2) / 3 * 4 }

// MaxMediaFor is the largest voice note or photo that crosses a bus of
// frames of maxFrame bytes.
func MaxMediaFor(maxFrame Size) Size { return max(maxFrame-mediaFrameRoom, 0) / 4 * 3 }

// roundUp is n rounded up to a multiple of unit, for a size in words.
func roundUp(n, unit Size) Size { return (n + unit - 1) / unit * unit }

// validateMedia checks the bounds of voice notes and photos, each of
// which must fit, base64, in one bus frame of maxFrame bytes.
func (t Telegram) validateMedia(maxFrame Size, def Telegram, add func(key, what, remedy string, about ...string)) {
	inRange(add, "telegram.photo_max_side", t.PhotoMaxSide, minPhotoSide, maxPhotoSide, def.PhotoMaxSide)
	for _, m := range []struct {
		key      string
		got, def Size
	}{{"telegram.voice_max_bytes", t.VoiceMaxBytes, def.VoiceMaxBytes}, {"telegram.photo_max_bytes", t.PhotoMaxBytes, def.PhotoMaxBytes}} {
		switch fits := MaxMediaFor(maxFrame); {
		case m.got < minMediaBytes || m.got > maxMediaBytes:
			inRange(add, m.key, m.got, minMediaBytes, maxMediaBytes, m.def)
		case m.got > fits:
			add(m.key, fmt.Sprintf("%v does not fit through the bus: it crosses in one frame, base64 (%v), beside %v of the rest, and bus.max_frame is %v",
				m.got, roundUp(Base64Size(m.got), 1<<10), Size(mediaFrameRoom), maxFrame),
				fmt.Sprintf("lower it to at most %v, or raise bus.max_frame to at least %v", fits, roundUp(Base64Size(m.got)+mediaFrameRoom, 1<<20)), "bus.max_frame")
		}
	}
}

func (p Panel) validate(def Panel, add func(key, what, remedy string, about ...string)) {
	if !slices.Contains(PanelDisplays, p.Display) {
		add("panel.display", fmt.Sprintf("%q is not a display shelldon knows", p.Display),
			fmt.Sprintf("use one of %s", strings.Join(PanelDisplays, ", ")))
	}
	if !filepath.IsAbs(p.PNGPath) {
		add("panel.png_path", fmt.Sprintf("%q is not an absolute path", p.PNGPath), fmt.Sprintf("use a full path, like %q", def.PNGPath))
	}
	inRange(add, "panel.full_every", p.FullEvery, 1, maxFullEvery, def.FullEvery)
	inRange(add, "panel.full_after", p.FullAfter.Duration, minFullAfter, maxFullAfter, def.FullAfter.Duration)
	inRange(add, "panel.sleep_after", p.SleepAfter.Duration, minSleepAfter, maxSleepAfter, def.SleepAfter.Duration)
}

// badServerURL says what is wrong with the base URL of a server shelldon
// calls, if anything. credentialsFix says where credentials go instead of
// the URL. A query or fragment is refused because the clients append their
// paths to the URL as text.
func badServerURL(raw, credentialsFix string) (string, bool) {
	if raw == "" {
		return "is empty", true
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL", raw), true
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q is not an http or https URL", raw), true
	case u.Host == "":
		return fmt.Sprintf("%q has no host", raw), true
	case u.User != nil:
		return fmt.Sprintf("%s holds credentials, which would end up in logs; %s", u.Redacted(), credentialsFix), true
	// Not echoed: a query may hold a key.
	case strings.ContainsAny(raw, "?#"):
		return "has a query (?…) or a fragment (#…), which would break the paths the client appends", true
	}
	return "", false
}

// suggestTimeouts proposes timeouts that keep the rule, scaled to the turn
// timeout the user chose when that is usable, else the defaults.
func suggestTimeouts(turn time.Duration) (worker, reap, total string) {
	def := Default().Timeouts
	if turn < time.Second {
		turn = def.Turn.Duration
	}
	scale := func(d time.Duration) time.Duration {
		// In floating point, because turn*d overflows for a turn of days.
		return time.Duration(float64(turn) / float64(def.Turn.Duration) * float64(d)).Round(100 * time.Millisecond)
	}
	return scale(def.Worker.Duration).String(), scale(def.Reap.Duration).String(), turn.String()
}
