package config

import (
	"fmt"
	"strconv"
	"strings"
)

// setting is one key the file may hold. This one table gives the keys the
// decoder accepts, the hint shown when a value has the wrong type, and the
// environment variable that overrides the key (its name derived from the
// key), so that file keys and variable names cannot drift apart.
type setting struct {
	key  string
	hint string
	// secret keys hold keys and tokens: no message may show their value.
	secret bool
	// set parses an environment value into the key's field; nil when the
	// key has no environment variable.
	set func(c *Config, value string) error
}

var settings = []setting{
	{key: "state_dir", hint: `a directory path, like "/var/lib/shelldon"`,
		set: textSetter(func(c *Config) *string { return &c.StateDir }, parseString)},
	{key: "socket", hint: `a file path, like "/var/lib/shelldon/bus.sock"`,
		set: textSetter(func(c *Config) *string { return &c.Socket }, parseString)},

	{key: "timeouts", hint: "a table: the section [timeouts]"},
	{key: "timeouts.worker", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Timeouts.Worker }, parseDuration)},
	{key: "timeouts.reap", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Timeouts.Reap }, parseDuration)},
	{key: "timeouts.turn", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Timeouts.Turn }, parseDuration)},
	{key: "timeouts.stop_grace", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Timeouts.StopGrace }, parseDuration)},

	{key: "turn", hint: "a table: the section [turn]"},
	{key: "turn.history_messages", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Turn.HistoryMessages }, parseInt)},
	{key: "turn.reaction_dwell", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Turn.ReactionDwell }, parseDuration)},
	{key: "turn.approval_expiry", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Turn.ApprovalExpiry }, parseDuration)},
	{key: "turn.tool_strikes", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Turn.ToolStrikes }, parseInt)},
	{key: "turn.rule_days", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Turn.RuleDays }, parseInt)},
	{key: "turn.max_model_calls", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Turn.MaxModelCalls }, parseInt)},
	{key: "turn.worker_command", hint: `an array of strings, like ["/usr/bin/shelldon-worker"]`},

	{key: "worker", hint: "a table: the section [worker]"},
	{key: "worker.memory_limit", hint: sizeHint,
		set: textSetter(func(c *Config) *Size { return &c.Worker.MemoryLimit }, parseSize)},
	{key: "worker.cpu_seconds", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Worker.CPUSeconds }, parseInt)},
	{key: "worker.open_files", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Worker.OpenFiles }, parseInt)},
	{key: "worker.user", hint: `a string, like "shelldon-worker"`,
		set: textSetter(func(c *Config) *string { return &c.Worker.User }, parseString)},

	{key: "bus", hint: "a table: the section [bus]"},
	{key: "bus.allowed_uids", hint: "an array of whole numbers, like [1001, 1002]"},
	{key: "bus.broker_users", hint: `an array of strings, user names or uids, like ["shelldon-broker"]`},
	{key: "bus.transport_users", hint: `an array of strings, user names or uids, like ["alice", "1001"]`},
	{key: "bus.queue_length", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Bus.QueueLength }, parseInt)},
	{key: "bus.max_frame", hint: sizeHint,
		set: textSetter(func(c *Config) *Size { return &c.Bus.MaxFrame }, parseSize)},

	{key: "provider", hint: "an array of tables: start each provider with [[provider]], in double brackets"},
	{key: "provider.name", hint: `a string, like "openrouter"`},
	{key: "provider.base_url", hint: `a string, like "https://openrouter.ai/api/v1"`},
	{key: "provider.model", hint: `a string, like "openai/gpt-4o-mini"`},
	{key: "provider.api_key", hint: "a string", secret: true},
	{key: "provider.api_key_credential", hint: `a string, like "openrouter-api-key"`},
	{key: "provider.timeout", hint: durationHint},
	{key: "provider.vision", hint: "true or false"},
	{key: "provider.transcription_model", hint: `a string, like "whisper-1"`},
	{key: "provider.stream", hint: "true or false"},
	{key: "provider.price_prompt_per_million", hint: priceHint},
	{key: "provider.price_completion_per_million", hint: priceHint},

	{key: "telegram", hint: "a table: the section [telegram]"},
	{key: "telegram.token", hint: "a string: the token @BotFather gave you", secret: true,
		set: textSetter(func(c *Config) *string { return &c.Telegram.Token }, parseString)},
	{key: "telegram.allowed_users", hint: "an array of whole numbers, like [123456789]",
		set: textSetter(func(c *Config) *[]int64 { return &c.Telegram.AllowedUsers }, parseIDList)},
	{key: "telegram.api_url", hint: `a string, like "https://api.telegram.org"`,
		set: textSetter(func(c *Config) *string { return &c.Telegram.APIURL }, parseString)},
	{key: "telegram.poll_timeout", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Telegram.PollTimeout }, parseDuration)},
	{key: "telegram.retry_max", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Telegram.RetryMax }, parseDuration)},
	{key: "telegram.give_up_attempts", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Telegram.GiveUpAttempts }, parseInt)},
	{key: "telegram.give_up_after", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Telegram.GiveUpAfter }, parseDuration)},
	{key: "telegram.voice_max_bytes", hint: sizeHint,
		set: textSetter(func(c *Config) *Size { return &c.Telegram.VoiceMaxBytes }, parseSize)},
	{key: "telegram.photo_max_bytes", hint: sizeHint,
		set: textSetter(func(c *Config) *Size { return &c.Telegram.PhotoMaxBytes }, parseSize)},
	{key: "telegram.photo_max_side", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Telegram.PhotoMaxSide }, parseInt)},
	{key: "telegram.react", hint: "true or false",
		set: textSetter(func(c *Config) *bool { return &c.Telegram.React }, parseBool)},

	{key: "panel", hint: "a table: the section [panel]"},
	{key: "panel.display", hint: `a string: "auto", "waveshare", "png" or "terminal"`,
		set: textSetter(func(c *Config) *string { return &c.Panel.Display }, parseString)},
	{key: "panel.png_path", hint: `a file path, like "/run/shelldon/panel.png"`,
		set: textSetter(func(c *Config) *string { return &c.Panel.PNGPath }, parseString)},
	{key: "panel.full_every", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Panel.FullEvery }, parseInt)},
	{key: "panel.full_after", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Panel.FullAfter }, parseDuration)},
	{key: "panel.sleep_after", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Panel.SleepAfter }, parseDuration)},
	{key: "panel.upside_down", hint: "true or false",
		set: textSetter(func(c *Config) *bool { return &c.Panel.UpsideDown }, parseBool)},

	{key: "mood", hint: "a table: the section [mood]"},
	{key: "mood.tick", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Mood.Tick }, parseDuration)},
	{key: "mood.night", hint: `a string, like "23:00-07:00", or "" for no night`,
		set: textSetter(func(c *Config) *string { return &c.Mood.Night }, parseString)},
	{key: "mood.lonely", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Mood.Lonely }, parseDuration)},

	{key: "schedule", hint: "a table: the section [schedule]"},
	{key: "schedule.daily_budget", hint: integerHint,
		set: textSetter(func(c *Config) *int { return &c.Schedule.DailyBudget }, parseInt)},
	{key: "schedule.cooldown", hint: durationHint,
		set: textSetter(func(c *Config) *Duration { return &c.Schedule.Cooldown }, parseDuration)},
	{key: "schedule.daily_token_budget", hint: tokensHint,
		set: textSetter(func(c *Config) *int { return &c.Schedule.DailyTokenBudget }, parseInt)},

	{key: "budget", hint: "a table: the section [budget]"},
	{key: "budget.daily_token_cap", hint: tokensHint,
		set: textSetter(func(c *Config) *int { return &c.Budget.DailyTokenCap }, parseInt)},
	{key: "budget.currency", hint: `a string, like "USD" or "€", or "" for bare numbers`,
		set: textSetter(func(c *Config) *string { return &c.Budget.Currency }, parseString)},

	{key: "sandbox", hint: "a table: the section [sandbox]"},
	{key: "sandbox.disk", hint: sizeHint,
		set: textSetter(func(c *Config) *Size { return &c.Sandbox.Disk }, parseSize)},
	{key: "sandbox.user", hint: `a string, like "shelldon-sandbox"`,
		set: textSetter(func(c *Config) *string { return &c.Sandbox.User }, parseString)},

	{key: "mcp", hint: "an array of tables: start each MCP server with [[mcp]], in double brackets"},
	{key: "mcp.name", hint: `a string, like "everything"`},
	{key: "mcp.command", hint: `a string: the program's path inside the container, like "/run/shelldon/mcp/server"`},
	{key: "mcp.args", hint: `an array of strings, like ["--stdio"]`},
	{key: "mcp.directory", hint: `a string: a host directory, like "/opt/mcp/everything"`},
	{key: "mcp.env", hint: `an array of strings, like ["LOG_LEVEL=info"]`},
	{key: "mcp.tools", hint: `an array of strings, like ["greet", "ping"]`},
	{key: "mcp.read_only", hint: `an array of strings, like ["ping"]`},
	{key: "mcp.workspace", hint: `a string: "none" or "read-only"`},
	{key: "mcp.egress", hint: "true or false"},
	{key: "mcp.memory", hint: sizeHint},
	{key: "mcp.cpu", hint: `a number of CPUs, like 0.5`},
	{key: "mcp.tasks", hint: integerHint},
	{key: "mcp.idle_stop", hint: durationHint},
	{key: "mcp.call_timeout", hint: durationHint},
}

const (
	durationHint = `a string with a unit, like "25s" or "1m30s"`
	integerHint  = "a whole number, like 12"
	sizeHint     = `a string like "512MiB" or "4MiB", or a bare number of bytes`
	tokensHint   = "a whole number of tokens, like 200000, or 0 for none"
	priceHint    = "a number in your currency, like 0.15 or 2"
)

// textSetter adapts a parser and a field to an environment setter.
func textSetter[T any](field func(*Config) *T, parse func(string) (T, error)) func(*Config, string) error {
	return func(c *Config, value string) error {
		v, err := parse(value)
		if err != nil {
			return err
		}
		*field(c) = v
		return nil
	}
}

func parseString(s string) (string, error) { return s, nil }

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is neither true nor false; write true or false", s)
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number; write digits only, like 12", s)
	}
	return n, nil
}

// parseIDList reads a list written in a variable as comma-separated whole
// numbers, like "42,43"; spaces around a number are allowed.
func parseIDList(s string) ([]int64, error) {
	var ids []int64
	for field := range strings.SplitSeq(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(field), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a comma-separated list of whole numbers; write the ids like 42,43", s)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// settingFor finds the setting of a key path such as "timeouts.worker".
func settingFor(key string) (setting, bool) {
	for _, s := range settings {
		if s.key == key {
			return s, true
		}
	}
	return setting{}, false
}

// parentKey is the table a key path lives in ("" at the top level) and
// leafKey its last part.
func parentKey(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[:i]
	}
	return ""
}

func leafKey(key string) string { return key[strings.LastIndexByte(key, '.')+1:] }

// siblingKeys lists, in table order, the leaves of the known keys in table
// parent ("" for the top level).
func siblingKeys(parent string) []string {
	var leaves []string
	for _, s := range settings {
		if parentKey(s.key) == parent {
			leaves = append(leaves, leafKey(s.key))
		}
	}
	return leaves
}

// tableLabel names a table as a reader of the file sees it.
func tableLabel(parent string) string {
	switch parent {
	case "":
		return "top-level keys"
	case "provider", "mcp":
		return "keys in [[" + parent + "]]"
	}
	return "keys in [" + parent + "]"
}

// unknownKeyError explains an unknown key path (whose table is known) and
// offers the closest known one.
func unknownKeyError(source, key string) error {
	candidates := make([]string, len(settings))
	for i, s := range settings {
		candidates[i] = s.key
	}
	parent := parentKey(key)
	fix := fmt.Sprintf("known %s: %s", tableLabel(parent), strings.Join(siblingKeys(parent), ", "))
	if guess, ok := closestKey(key, candidates); ok {
		fix = fmt.Sprintf("did you mean %q? %s", guess, fix)
	}
	return &configError{source: source, key: key, problem: "unknown key", fix: fix}
}
