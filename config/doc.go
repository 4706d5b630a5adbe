// Package config loads shelldon's one configuration file and its
// environment overrides, for every actor: core, the broker, the worker and
// the command line.
//
// [Load] starts from [Default], decodes the TOML file strictly (an unknown
// key, a key in the wrong case, or a value of the wrong type is an error),
// applies the environment, fills in derived values (an absolute state_dir,
// socket = <state_dir>/bus.sock, each provider's timeout = timeouts.worker)
// and runs [Config.Validate]. Every error says where the bad value came from
// (the file, with its line, or "environment"),
// which key, what is wrong and how to fix it:
//
//	config /etc/shelldon/shelldon.toml:27: timeouts.wrker: unknown key; did you mean "timeouts.worker"? known keys in [timeouts]: worker, reap, turn
//
// # Environment
//
// Each scalar key has a variable named SHELLDON_ followed by its key path in
// upper case with dots turned into underscores: timeouts.worker is
// SHELLDON_TIMEOUTS_WORKER, bus.max_frame is SHELLDON_BUS_MAX_FRAME. Values
// are written as in the file without TOML quotes ("25s", "4MiB", "12"). One
// list has a variable too: telegram.allowed_users, written comma-separated
// (SHELLDON_TELEGRAM_ALLOWED_USERS=42,43). An empty value counts as unset.
// The other lists (turn.worker_command, bus.allowed_uids, bus.broker_users,
// bus.transport_users) and the provider chain have no per-key variable;
// instead SHELLDON_PROVIDER_URL replaces the whole chain with one provider,
// named by SHELLDON_PROVIDER_NAME (default "env"), with model
// SHELLDON_PROVIDER_MODEL (required then) and key SHELLDON_PROVIDER_KEY.
//
// Any other SHELLDON_ variable is refused as a probable typo, except these,
// which the project uses for things other than configuration:
//
//   - SHELLDON_CONFIG: the path of the configuration file, read by the
//     command line before it calls Load.
//   - SHELLDON_REQUIRE_ALL: makes tests fail instead of skip when a real
//     part they need (root, systemd, nspawn) is missing.
//   - SHELLDON_TEST_*: anything tests pass to themselves or their children.
//
// The annotated example file, shelldon.example.toml in this directory, is
// also available as [Example].
package config
