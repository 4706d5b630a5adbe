package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"shelldon/config"
	"shelldon/demomodel"
	"shelldon/testhost"
	"shelldon/transports/telegram/telegramtest"
)

// peerEnv names the PicoClaw binary BenchmarkTurnBesidePicoClaw runs
// beside shelldon; BENCHMARKS.md says which version was measured.
const peerEnv = "PEER_PICOCLAW_BIN"

// peerBotToken is both peers' bot token; PicoClaw's Telegram client checks
// a token's form, which wants 35 characters after the colon.
const peerBotToken = "123456:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQr"

// The side-by-side's shape: rounds of turns (b.N of them), shelldon's and
// PicoClaw's interleaved, with a pause between turns as between the
// messages of an exchange, long enough for what a pet does once a turn is
// over (it collects half a second after). The pauses stay short of
// giveback's long quiet (20 s), after which the pet's processes return
// their heap and let go of their code's pages, for the next turn to fault
// back in: BENCHMARKS.md says what a turn after such a silence costs.
//
// -peer.pause and -peer.turns change the shape, for turns that each come
// after such a silence (BENCHMARKS.md, "After a silence").
var (
	peerTurnsPerRound = flag.Int("peer.turns", 20, "turns in each round of BenchmarkTurnBesidePicoClaw")
	peerPause         = flag.Duration("peer.pause", 1100*time.Millisecond, "the pause after each turn of BenchmarkTurnBesidePicoClaw")
)

// peerIdleWindow is how long each peer is watched doing nothing, a
// pause's length after its first turn.
const peerIdleWindow = 5 * time.Second

// BenchmarkTurnBesidePicoClaw runs shelldon twice — as `bin/shelldon up`
// (core, the broker and the panel drawing to a PNG file in one process, a
// worker process per turn) and as the installed pet runs (`shelldon
// daemon`, `shelldon broker` and `shelldon panel`, a process each, a
// worker process per turn; without systemd here, core starts the workers
// itself) — and PicoClaw (`picoclaw gateway`, its agent loop in the one process) side by
// side, each the program an owner runs, each with its Telegram channel on
// a local Bot API server of its own and the same scripted model on
// loopback behind its OpenAI-compatible provider. Each gets the same
// messages one at a time, in interleaved rounds, and the benchmark reports
// for each the median from the message queued at the Bot API server to
// the reply held there, the CPU per turn (user and system time of the
// process and of the children it reaped, from /proc/PID/stat, over the
// whole round, pauses included; for the installed shape, the sum of its
// three processes), and the ratios shelldon / PicoClaw.
//
// Nothing here leaves loopback; make bench-peer runs it in a network
// namespace of its own besides. -benchtime 5x runs 5 rounds.
func BenchmarkTurnBesidePicoClaw(b *testing.B) {
	peerBin := os.Getenv(peerEnv)
	if peerBin == "" {
		testhost.Missing(b, "a PicoClaw binary named by $"+peerEnv, "see BENCHMARKS.md, 'Beside PicoClaw'")
	}
	peers := []*chatPeer{startShelldonPeer(b, false), startShelldonPeer(b, true), startPicoClawPeer(b, peerBin)}
	for _, p := range peers {
		p.waitPolling(b)
	}
	for _, p := range peers {
		p.turn(b, "hello") // the first turn of a process warms what it loads once
	}
	// What each costs doing nothing, part of every pause below.
	idle := make([]float64, len(peers))
	for i, p := range peers {
		idle[i] = p.idleCPU(b, peerIdleWindow)
	}
	b.ResetTimer()
	for range b.N {
		for _, p := range peers {
			p.round(b, *peerTurnsPerRound)
		}
	}
	b.StopTimer()
	picoclaw := peers[2].figures()
	b.ReportMetric(picoclaw.medianMS, "picoclaw-median-ms")
	b.ReportMetric(picoclaw.cpuMS, "picoclaw-cpu-ms")
	b.ReportMetric(idle[2], "picoclaw-idle-cpu-ms/s")
	b.ReportMetric(peers[2].apiCallsPerTurn(), "picoclaw-api-calls/turn")
	for i, p := range peers[:2] {
		shelldon := p.figures()
		b.ReportMetric(shelldon.medianMS, p.name+"-median-ms")
		b.ReportMetric(shelldon.cpuMS, p.name+"-cpu-ms")
		b.ReportMetric(shelldon.medianMS/picoclaw.medianMS, p.name+"-ratio-median-ms")
		b.ReportMetric(shelldon.cpuMS/picoclaw.cpuMS, p.name+"-ratio-cpu-ms")
		b.ReportMetric(idle[i], p.name+"-idle-cpu-ms/s")
		b.ReportMetric(p.apiCallsPerTurn(), p.name+"-api-calls/turn")
		// Of shelldon's CPU, what its workers took (a process each turn).
		b.ReportMetric(ms(median(p.perRound(spentByChildren))), p.name+"-workers-cpu-ms")
		if len(p.procs) > 1 {
			// Each service's part (the daemon's with its workers').
			for j, proc := range p.procs {
				one := func(procs []procCPU) time.Duration { return spentAll(procs[j : j+1]) }
				b.ReportMetric(ms(median(p.perRound(one))), p.name+"-"+proc.Args[1]+"-cpu-ms")
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

// chatPeer is one program under the side-by-side: its processes, the Bot
// API server its Telegram channel polls, and what its turns took.
type chatPeer struct {
	name  string
	api   *telegramtest.Server
	procs []*exec.Cmd
	// latencies are every timed turn's; rounds hold, for each round, the
	// CPU each of procs and its reaped children spent a turn.
	latencies []time.Duration
	rounds    [][]procCPU
	sent      int
}

// waitPolling waits until the peer's channel is long-polling the Bot API
// server: a message sent before may be dropped as a backlog.
func (p *chatPeer) waitPolling(b *testing.B) {
	b.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, c := range p.api.Calls("getUpdates") {
			if t, ok := c.Params["timeout"]; ok && t != "0" {
				return
			}
		}
	}
	b.Fatalf("%s never long-polled its Bot API server", p.name)
}

// turn sends one message and waits for the reply: the bot's first message
// after what was there, once its text is the model's answer (a channel
// may send a placeholder first and edit it).
func (p *chatPeer) turn(b *testing.B, text string) time.Duration {
	b.Helper()
	before := len(p.api.Messages(ownerID))
	start := time.Now()
	p.api.SendText(ownerID, text)
	p.api.WaitMessage(b, ownerID, func(m telegramtest.Message) bool {
		return len(p.api.Messages(ownerID)) > before && strings.HasPrefix(m.Text, "ok") && p.isNew(m, before)
	})
	return time.Since(start)
}

// isNew reports whether m is one of the bot's messages after the first
// before ones.
func (p *chatPeer) isNew(m telegramtest.Message, before int) bool {
	all := p.api.Messages(ownerID)
	for _, seen := range all[:min(before, len(all))] {
		if seen.ID == m.ID {
			return false
		}
	}
	return true
}

// round runs n turns, a pause after each, and keeps their latencies and
// the CPU the peer spent over the round.
func (p *chatPeer) round(b *testing.B, n int) {
	b.Helper()
	before := p.procsCPU(b)
	for range n {
		p.sent++
		p.latencies = append(p.latencies, p.turn(b, fmt.Sprintf("message %d", p.sent)))
		time.Sleep(*peerPause)
	}
	after := p.procsCPU(b)
	perTurn := make([]procCPU, len(p.procs))
	for i := range p.procs {
		perTurn[i] = procCPU{
			self:     (after[i].self - before[i].self) / time.Duration(n),
			children: (after[i].children - before[i].children) / time.Duration(n),
		}
	}
	p.rounds = append(p.rounds, perTurn)
}

// perRound is, for each round, what of its CPU a turn spent counts.
func (p *chatPeer) perRound(spent func(procs []procCPU) time.Duration) []time.Duration {
	var figures []time.Duration
	for _, r := range p.rounds {
		figures = append(figures, spent(r))
	}
	return figures
}

// spentAll is what processes and their reaped children spent;
// spentByChildren what the children (the workers) spent.
func spentAll(procs []procCPU) (d time.Duration) {
	for _, c := range procs {
		d += c.self + c.children
	}
	return d
}

func spentByChildren(procs []procCPU) (d time.Duration) {
	for _, c := range procs {
		d += c.children
	}
	return d
}

// idleCPU is the CPU the peer spends a second while nothing happens,
// watched over window once what its last turn left has settled.
func (p *chatPeer) idleCPU(b *testing.B, window time.Duration) float64 {
	b.Helper()
	time.Sleep(*peerPause)
	before := spentAll(p.procsCPU(b))
	time.Sleep(window)
	return ms(spentAll(p.procsCPU(b))-before) / window.Seconds()
}

// procCPU is one process's CPU time and its reaped children's.
type procCPU struct{ self, children time.Duration }

// procsCPU is the CPU time of each of the peer's processes.
func (p *chatPeer) procsCPU(b *testing.B) []procCPU {
	b.Helper()
	cpus := make([]procCPU, len(p.procs))
	for i, proc := range p.procs {
		cpus[i].self, cpus[i].children = processCPU(b, proc.Process.Pid)
	}
	return cpus
}

type peerFigures struct{ medianMS, cpuMS float64 }

// figures are the median latency of all turns and the median of the
// rounds' CPU per turn.
func (p *chatPeer) figures() peerFigures {
	return peerFigures{medianMS: ms(median(p.latencies)), cpuMS: ms(median(p.perRound(spentAll)))}
}

// apiCallsPerTurn is how many Bot API calls the peer made a turn, its
// first turn and its long polls included: what each turn costs in
// requests to Telegram.
func (p *chatPeer) apiCallsPerTurn() float64 {
	return float64(len(p.api.Calls(""))) / float64(p.sent+1)
}

// median is the middle of figures (the upper middle of an even count).
func median[T cmp.Ordered](d []T) T {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture shelldon runs on.
const clockTicks = 100

// processCPU is the user and system time of process pid, and that of the
// children it has waited for (a worker per turn, for shelldon).
func processCPU(b *testing.B, pid int) (self, children time.Duration) {
	b.Helper()
	_, fields, err := testhost.ProcStat(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || len(fields) < 15 {
		b.Fatalf("/proc/%d/stat: %v, %d fields", pid, err, len(fields))
	}
	var ticks [4]int64 // utime, stime, cutime, cstime: fields 14 to 17
	for i, f := range fields[11:15] {
		if ticks[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
	}
	tick := time.Second / clockTicks
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick
}

// scriptedPeerModel is the model both peers talk to: it answers every
// request at once with the same reply.
func scriptedPeerModel(b *testing.B) string {
	model := demomodel.New()
	model.Fallback = func(demomodel.Request) demomodel.Step { return demomodel.Step{Text: "ok\nFACE: happy"} }
	return serve(b, model)
}

// startShelldonPeer runs shelldon as its owner would — `bin/shelldon up`,
// or installed, its daemon, broker and panel (drawing to a PNG file) each
// a process — with its Telegram transport on a local Bot API server and
// the scripted model as its provider.
func startShelldonPeer(b *testing.B, installed bool) *chatPeer {
	bin := builtBinary(b)
	api := telegramtest.New(b, peerBotToken)
	cfg := config.Default()
	cfg.StateDir = testhost.ShortDir(b)
	cfg.Socket = filepath.Join(cfg.StateDir, "bus.sock")
	cfg.Providers = []config.Provider{{Name: "scripted", BaseURL: scriptedPeerModel(b), Model: demomodel.ModelName}}
	cfg.Telegram.Token, cfg.Telegram.APIURL, cfg.Telegram.AllowedUsers = peerBotToken, api.URL(), []int64{ownerID}
	// `up` draws to <state-dir>/panel.png, as make run does; the installed
	// pet to its default, /run/shelldon/panel.png, a tmpfs on a board.
	cfg.Panel.Display, cfg.Panel.PNGPath = "png", filepath.Join(cfg.StateDir, "panel.png")
	if installed {
		cfg.Panel.PNGPath = filepath.Join(memoryDir(b), "panel.png")
	}
	path := writeTestConfig(b, cfg)
	if !installed {
		return &chatPeer{name: "shelldon", api: api, procs: []*exec.Cmd{startProcess(b, bin, "up", "--config", path)}}
	}
	var procs []*exec.Cmd
	for _, service := range []string{"daemon", "broker", "panel"} {
		procs = append(procs, startProcess(b, bin, service, "--config", path))
	}
	return &chatPeer{name: "shelldon-installed", api: api, procs: procs}
}

// memoryDir is a directory of a tmpfs, as /run is on the board, removed
// at cleanup.
func memoryDir(b *testing.B) string {
	b.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &fs); err != nil || fs.Type != tmpfsMagic {
		testhost.Missing(b, "a tmpfs at /dev/shm", "the installed pet draws its face to /run/shelldon, a tmpfs")
	}
	dir, err := os.MkdirTemp("/dev/shm", "shelldon-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// tmpfsMagic is statfs's f_type of a tmpfs (linux/magic.h).
const tmpfsMagic = 0x01021994

// startPicoClawPeer runs `picoclaw gateway` with a configuration of its
// own: its Telegram channel on a local Bot API server, the scripted model
// behind its OpenAI-compatible provider, and nothing that would reach
// past loopback (no skill registries, web tools, heartbeat or update
// checks).
func startPicoClawPeer(b *testing.B, bin string) *chatPeer {
	api := telegramtest.New(b, peerBotToken)
	home := b.TempDir()
	workspace := filepath.Join(home, "workspace")
	cfg := map[string]any{
		"version": 3,
		"agents": map[string]any{"defaults": map[string]any{
			"workspace": workspace, "restrict_to_workspace": true, "model_name": "scripted",
			"max_tokens": 1024, "max_tool_iterations": 20,
		}},
		"model_list": []any{map[string]any{
			"model_name": "scripted", "model": "openai/" + demomodel.ModelName,
			"api_keys": []string{"scripted"}, "api_base": scriptedPeerModel(b),
		}},
		"channel_list": map[string]any{"telegram": map[string]any{
			"enabled": true, "type": "telegram", "allow_from": []string{strconv.Itoa(ownerID)},
			"settings": map[string]any{"token": peerBotToken, "base_url": api.URL(), "streaming": map[string]any{"enabled": false}},
		}},
		"heartbeat": map[string]any{"enabled": false},
		"gateway":   map[string]any{"host": "127.0.0.1", "port": freePort(b), "log_level": "fatal"},
		"tools": map[string]any{
			"web":    map[string]any{"enabled": false},
			"skills": map[string]any{"enabled": false},
			"cron":   map[string]any{"enabled": false},
		},
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(home, "config.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "gateway")
	cmd.Env = append(os.Environ(), "PICOCLAW_HOME="+home, "PICOCLAW_CONFIG="+path, "HOME="+home,
		// Whatever would still reach out is sent to a closed port on
		// loopback.
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &chatPeer{name: "picoclaw", api: api, procs: []*exec.Cmd{cmd}}
}

// freePort is a loopback TCP port free a moment ago.
func freePort(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
