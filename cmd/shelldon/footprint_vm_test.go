package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost/vm"
	"shelldon/transports/telegram/telegramtest"
)

// footprintTurns is how many turns the pet lives through before it is
// measured; one in sandboxEvery of them runs a command in the sandbox.
// footprintIdle is how long it then sits idle: longer than giveback's
// long quiet (20 s), after which each process holds only the pages of its
// binary that it runs idle.
const (
	footprintTurns = 200
	sandboxEvery   = 10
	footprintIdle  = 30 * time.Second

	idleSamples     = 13 // a minute, the panel's redraw period, both ends counted
	idleSampleEvery = 5 * time.Second
)

// BenchmarkFootprintInVM installs the .deb on a 512 MB VM with cgroup v2,
// lives footprintTurns turns over Telegram, and then, idle, reports what
// the targets are about: the PSS and RSS of core, broker and
// panel, the largest turn's peak (memory.peak of its unit's cgroup), the
// largest sandboxed command's, and the memory of shelldon.slice.
// Run by make bench with -benchtime 1x.
func BenchmarkFootprintInVM(b *testing.B) { footprintInVM(b, "amd64") }

// BenchmarkFootprintInAnArm64VM is BenchmarkFootprintInVM on the board's
// architecture: the arm64 .deb on the arm64 VM (a Cortex-A53 under TCG).
// Its memory figures are the board's binaries' own; its times are an
// emulated CPU's, no board's. Run by make bench-arm64.
func BenchmarkFootprintInAnArm64VM(b *testing.B) { footprintInVM(b, "arm64") }

func footprintInVM(b *testing.B, arch string) {
	vm.Require(b, arch)
	sandboxImage := imagetest.ForArch(b, arch)
	deb := vm.BuildDeb(b, arch)
	for range b.N {
		measureFootprintInVM(b, bootPet(b, arch, sandboxImage, deb, footprintModel()))
	}
}

// footprintModel answers "message N" with "ok N", first listing the
// workspace in the sandbox when the message asks for it.
func footprintModel() *demomodel.Server {
	number := regexp.MustCompile(`message (\d+)`)
	model := demomodel.New()
	model.Fallback = func(req demomodel.Request) demomodel.Step {
		last := req.Messages[len(req.Messages)-1]
		for _, m := range slices.Backward(req.Messages) {
			if m.Role != contracts.ChatUser {
				continue
			}
			if last.Role == contracts.ChatUser && strings.Contains(m.Content, "list the workspace") {
				return demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "ls", Name: "run_shell", Args: `{"command": "ls -la"}`}}}
			}
			if n := number.FindStringSubmatch(m.Content); n != nil {
				return demomodel.Step{Text: "ok " + n[1]}
			}
			break
		}
		return demomodel.Step{Text: "ok"}
	}
	return model
}

func measureFootprintInVM(b *testing.B, pet petInAVM) {
	ctx := context.Background()
	var latencies []time.Duration
	for i := range footprintTurns {
		text := fmt.Sprintf("message %d", i)
		if i%sandboxEvery == sandboxEvery-1 {
			text += ": list the workspace"
		}
		want := fmt.Sprintf("ok %d", i)
		start := time.Now()
		pet.api.SendText(ownerID, text)
		pet.api.WaitMessage(b, ownerID, func(m telegramtest.Message) bool { return m.Text == want })
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	b.ReportMetric(ms(latencies[len(latencies)/2]), "turn-median-ms")

	waitFor(b, "the last turn's unit gone", func() bool {
		out, _ := pet.guest.Exec(ctx, "systemctl", "list-units", "--no-legend", "--plain", "--state=running", "shelldon-turn@*", "shelldon-run@*")
		return strings.TrimSpace(string(out)) == ""
	})
	time.Sleep(footprintIdle) // idle: Telegram polls, the runtimes settle, the panel draws its last frame

	var procs []idleProcess
	for _, svc := range []struct{ unit, name string }{
		{"shelldon.service", "core"}, {"shelldon-broker.service", "broker"}, {"shelldon-panel.service", "panel"},
	} {
		pid := strings.TrimSpace(pet.guest.Must(b, "systemctl", "show", "-P", "MainPID", svc.unit))
		procs = append(procs, idleProcess{
			name: svc.name, pid: pid,
			rollup: func() rollup { return parseSmapsRollup([]byte(pet.guest.Must(b, "cat", "/proc/"+pid+"/smaps_rollup"))) },
			smaps:  func() []byte { return []byte(pet.guest.Must(b, "cat", "/proc/"+pid+"/smaps")) },
		})
	}
	// Each sample is a command in the guest: nothing is summed between.
	sampleIdleMinute(b, procs, 0)

	cgroupMB := func(file string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(pet.guest.Must(b, "cat", "/sys/fs/cgroup/shelldon.slice/"+file)), 64)
		if err != nil {
			b.Fatalf("%s: %v", file, err)
		}
		return v / (1 << 20)
	}
	b.ReportMetric(cgroupMB("memory.current"), "slice-MB")
	b.ReportMetric(cgroupMB("memory.peak"), "slice-peak-MB")
	b.ReportMetric(cgroupMB("shelldon-turns.slice/memory.peak"), "turns-slice-peak-MB")
	b.Logf("systemd-cgtop:\n%s", pet.guest.Must(b, "systemd-cgtop", "-b", "-n", "1", "-m", "--depth=3", "shelldon.slice"))

	var peaks []float64
	for _, turn := range guestTurns(b, pet.guest, footprintTurns) {
		if turn.WorkerPeak > 0 {
			peaks = append(peaks, float64(turn.WorkerPeak)/(1<<20))
		}
	}
	if len(peaks) < footprintTurns {
		b.Fatalf("shelldon turns records %d peaks, want %d", len(peaks), footprintTurns)
	}
	slices.Sort(peaks)
	b.ReportMetric(peaks[len(peaks)/2], "worker-median-peak-MB")
	b.ReportMetric(peaks[len(peaks)-1], "worker-peak-MB")

	runs := sandboxPeaks(b, pet.guest.Must(b, "journalctl", "-o", "json", "-u", "shelldon.service", "MESSAGE=sandboxed command"))
	if len(runs) < footprintTurns/sandboxEvery {
		b.Fatalf("the journal has %d sandboxed commands with a peak, want %d", len(runs), footprintTurns/sandboxEvery)
	}
	b.ReportMetric(runs[len(runs)-1], "sandbox-peak-MB")
	b.ReportMetric(0, "ns/op")
}

// sandboxPeaks reads the memory peaks of sandboxed commands from core's
// journal entries (journalctl -o json), in MB, sorted.
func sandboxPeaks(b *testing.B, entries string) []float64 {
	var peaks []float64
	for _, line := range strings.Split(strings.TrimSpace(entries), "\n") {
		var e struct {
			Peak string `json:"SHELLDON_MEMORY_PEAK"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			b.Fatalf("journal entry %q: %v", line, err)
		}
		if bytes, err := strconv.ParseFloat(e.Peak, 64); err == nil && bytes > 0 {
			peaks = append(peaks, bytes/(1<<20))
		}
	}
	slices.Sort(peaks)
	return peaks
}
