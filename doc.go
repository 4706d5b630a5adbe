// Package shelldon is a personal AI pet for small Linux boards. This root
// package holds no code; it documents the layout and carries the tests
// that keep the architecture honest (the import rules and package docs),
// each binary's list of dependencies (cmd/*/deps.txt), and the level that
// runs the packages' tests on the board's architectures under qemu-user.
//
// The packages and what each is for (a test keeps this map whole; the
// architecture is told in docs/architecture.md):
//
//	contracts/                    the vocabulary every actor shares: envelopes, kinds, routes, ops
//	bus/                          the wire: length-prefixed frames and the client actors join with
//	daemon/                       core: routes envelopes, events and decisions to its parts
//	daemon/turns                  the turn state machine: arbiter, fence, timeouts, catch-up
//	daemon/driver                 drives the turn machine: starts each worker, takes its result, finishes the turn
//	daemon/intake                 the owner's messages: kept before anything, offered to the turns, taken up after a restart
//	daemon/commands               the owner's commands: /status, /tools, /pending, /rules and the rest
//	daemon/progress               what a turn is doing, one line per step, for the owner
//	daemon/tokencap               the daily token cap's effects: asking before a turn past it, and the answer
//	daemon/ops                    a turn's ops applied, and its requests kept, as the only writer of state
//	daemon/approval               the approval authority: every request the owner decides on
//	daemon/approval/approved      carries out what the owner approved, checked against its digest
//	daemon/toolstore              the self-coded tools, out of the model's reach, verified at load
//	daemon/selfcode               the gate a proposed tool must pass
//	daemon/hub                    core's side of the bus: who may take which role, and routing
//	daemon/media                  the owner's voice notes' transcripts and photos, kept until their turn has answered
//	daemon/handoff                each reply kept until the transport that delivers it holds it
//	daemon/hub/hubtest            a real hub on a real socket, for other packages' tests
//	daemon/launch                 how a turn's worker is started, bounded and reaped
//	daemon/launch/launchtest      the conformance suite every launcher passes
//	daemon/state                  the only writer of state: SQLite and the memory tree
//	daemon/statedir               where everything lives in the state directory
//	daemon/pairing                the one-time code that makes the bot's owner (shelldon pair)
//	daemon/mood                   the pet's feeling between turns
//	daemon/schedule               the times of the turns the pet starts itself
//	daemon/tokens                 what turns spend on their model: the day, the month, the cost
//	daemon/owner                  what core tells its owner about itself
//	daemon/visible                text made visible: no escape or bidi override reaches a screen
//	daemon/doctor                 what the host lacks, and how to fix it
//	daemon/fetch                  the guarded HTTP GET behind http_get
//	daemon/mcp                    core's MCP client: each configured server in a sandbox container of its own
//	daemon/mcp/mcptest            the official Go SDK's example MCP servers, built for tests
//	daemon/journal                structured audit lines for systemd's journal
//	daemon/sdnotify               READY, STATUS and the watchdog, for systemd
//	daemon/procmem                memory figures of this process, its cgroup and the machine
//	worker/                       one turn's brain adapter: prompt, model, reply parsing
//	worker/skills                 the Agent Skills in the workspace, as a turn's prompt names them
//	tools/                        the tools' definitions and checks, shared by core and worker
//	transports/telegram           the Telegram transport, run inside core's process
//	transports/telegram/telegramtest a local Bot API server for tests
//	transports/chat               the terminal transport (`shelldon chat`)
//	transports/chat/chattest      a real pseudo-terminal and a model of its screen, for the chat's tests
//	transports/transporttest      the conformance suite every transport passes
//	policy/                       every safety decision, as pure functions
//	sandbox/                      the nspawn container one command runs in, and its change set
//	sandbox/cgroup                a control group of a run's own where no systemd unit holds it
//	sandbox/image                 the sandbox's root file system: built, found, checked
//	sandbox/image/imagetest       the real image for tests, built once
//	sandbox/sandboxtest           the conformance suite every sandbox backend passes
//	beneath/                      reading and writing beneath a root without following a link
//	broker/                       the providers behind CompleteWithTools; executes nothing
//	panel/                        the e-ink face: the actor behind `shelldon panel`
//	panel/moment                  what each moment shows: the face, the strip's word, the caption
//	panel/render                  the frame: status strip, face and caption
//	panel/render/rendertest       golden PNGs of frames, for tests
//	panel/displaytest             the conformance suite every display passes
//	panel/epd                     the Waveshare 2.13" V4 driver
//	panel/epd/epdtest             a fake Waveshare controller on periph's fakes, checking the driver's bytes
//	config/                       the TOML file and its environment overrides
//	setup/                        what `shelldon setup` checks and writes: bot token, provider, secrets, [[provider]]
//	clock/                        real time in production, a fake clock in tests; the hours of a day's window
//	atomicfile/                   a file replaced whole or not at all
//	tailbuf/                      the last bytes of an unbounded stream, and how many came before
//	faces/                        the face registry: the faces core lets the model pick and the panel draws
//	giveback/                     a process's spare memory back to the kernel once it goes quiet
//	demomodel/                    the scripted OpenAI-compatible model for tests and demos
//	demomodel/phrases             the phrases the demo persona understands, for the banner and /help
//	images/                       the recipes of the root file systems, carried in the binary
//	units/                        the systemd units, slices, users and tmpfiles
//	manual/                       the owner's manual (README.md, docs/) read for the tests that hold it to the code
//	testhost/                     what this machine can do, and skips that name what is missing
//	testhost/systemdhost          a real systemd booted from a root of its own, for tests
//	testhost/vm                   a whole Debian machine under qemu, amd64 or the board's arm64, for end-to-end tests
//	cmd/shelldon                  the main binary: core, broker, panel, chat and the owner's tools
//	cmd/shelldon-worker           one turn's worker (and python_eval's evaluator), linking only what it runs
//	cmd/shelldon-demo-model       the scripted model as a program of its own
//	cmd/shelldon-demo-mcp         the example MCP server `make run` gives the demo model
//
// Import rules (see arch_test.go): core stays LLM-free, the broker
// executes nothing, the worker writes no state, core does not reach into
// the worker, the shared tool checks belong to neither, and policy
// depends on nothing of the project but the contracts.
package shelldon
