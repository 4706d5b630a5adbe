package main

import (
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/demomodel"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost/vm"
)

// TestBoardPetInAnArm64VM is TestWholePetInAVM's essentials on the board's
// architecture: the arm64 .deb installed on an arm64 Debian VM (qemu's
// virt machine with the Raspberry Pi Zero 2W's Cortex-A53, 512 MB, cgroup
// v2), its sandbox the arm64 image, the owner's life lived over a local
// Bot API server and the scripted model on this machine. Every
// instruction is emulated, so it keeps to what a board must do and waits
// generously.
func TestBoardPetInAnArm64VM(t *testing.T) {
	vm.Require(t, "arm64")
	sandboxImage := imagetest.ForArch(t, "arm64") // the guest has no network to build one
	deb := vm.BuildDebWithTestHooks(t, "arm64")
	const greeting = "Hello from the board!\nTHOUGHT: arm at last\nFACE: excited"
	model := demomodel.New(
		// 2. a chat turn; a read-only command that runs without asking;
		// a RISKY command approved
		demomodel.Step{Text: greeting},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "u1", Name: "run_shell", Args: `{"command": "uname -m"}`}}},
		demomodel.Step{Text: "I know what I run on."},
		demomodel.Step{ToolCalls: []contracts.ToolCall{{ID: "s1", Name: "run_shell", Args: `{"command": "echo made on the board > board.txt"}`}}},
		demomodel.Step{Text: "Done: board.txt is there."},
		// 3. a slow turn, long enough to be caught in its unit
		demomodel.Step{Text: "that took a while\nFACE: cool", Delay: 10 * time.Second},
		// 4. a worker killed by the kernel asks the model nothing; the
		// turn after it does
		demomodel.Step{Text: "Fine again."},
	)
	pet := bootPet(t, "arm64", sandboxImage, deb, model)
	guest := pet.guest

	t.Run("1 an arm64 Cortex-A53 guest, the services run and doctor is content", func(t *testing.T) {
		if got := strings.TrimSpace(guest.Must(t, "uname", "-m")); got != "aarch64" {
			t.Fatalf("the guest's uname -m = %q, want aarch64", got)
		}
		// 0xd03 is the Cortex-A53's part number.
		if cpu := guest.Must(t, "cat", "/proc/cpuinfo"); !strings.Contains(cpu, "CPU part\t: 0xd03") {
			t.Errorf("the guest's CPU is no Cortex-A53:\n%s", cpu)
		}
		if got := strings.TrimSpace(guest.Must(t, "dpkg", "--print-architecture")); got != "arm64" {
			t.Errorf("the guest's dpkg architecture = %q, want arm64", got)
		}
		checkServicesAndDoctor(t, pet)
	})

	t.Run("2 a chat turn and commands in the sandbox", func(t *testing.T) {
		checkFirstTurn(t, pet, model, "hello board", greeting)
		pet.api.SendText(ownerID, "what do you run on?")
		pet.api.WaitMessage(t, ownerID, textHas("I know what I run on."))
		if got := toolAnswer(model.Requests(), "u1"); got != "exit 0\naarch64\n" {
			t.Errorf("uname -m in the sandbox answered %q, want exit 0 and aarch64", got)
		}
		checkApprovedCommand(t, pet, "make me a file", "board.txt", "made on the board\n", "Done: board.txt is there.")
	})

	t.Run("3 a slow turn in its unit, and its story in the journal", func(t *testing.T) {
		checkTurnStory(t, pet, "take your time", "that took a while")
	})

	t.Run("4 the kernel's OOM killer ends a turn, and the pet goes on", func(t *testing.T) {
		checkWorkerOOMKilled(t, pet, "are you all right?", "Fine again.")
	})
}
