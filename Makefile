# shelldon — see README.md. `make run` and `make test` are the two commands
# a newcomer needs; the rest is for building and shipping.

GO      ?= go
BIN     := bin
DIST    := dist
STATE   ?= var
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
PREFIX  ?= /usr
DESTDIR ?=

# Every build is pure Go, so cross-building needs no C toolchain. Forced,
# not defaulted: a CGO_ENABLED=1 in the caller's environment (the race
# detector's, when tests build packages) would make cross-builds reach for
# a C cross-compiler and amd64 builds link against glibc. Only the race
# run below turns cgo on, for itself.
override CGO_ENABLED := 0
export CGO_ENABLED

.PHONY: all build run test test-deps test-cross e2e e2e-arm64 bench bench-arm64 bench-board bench-peer peer-picoclaw release install clean image deb

# Debian versions must start with a digit; git's description follows.
DEB_VERSION ?= 0.1.0+git$(subst -,.,$(VERSION))
NFPM        := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

all: build

# The programs a pet is made of: shelldon (core, broker, panel and the
# owner's commands) and shelldon-worker (one turn's worker), which core
# runs from its own directory, so the two are always installed together.
PROGRAMS := shelldon shelldon-worker

build:
	$(foreach p,$(PROGRAMS),$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/$(p) ./cmd/$(p) &&) true
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/shelldon-demo-model ./cmd/shelldon-demo-model
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/demo-mcp/shelldon-demo-mcp ./cmd/shelldon-demo-mcp

# The pet in this terminal, state in ./var. With no provider configured it
# talks to the scripted demo model and says so, and, with no [[mcp]]
# table either, gives it the example MCP server in bin/demo-mcp (a
# directory of its own: the server's container sees it).
run: build
	./$(BIN)/shelldon up --chat --state-dir $(STATE)

# Installs what the test levels need when run as root, then runs every
# level this machine can run. SHELLDON_REQUIRE_ALL=1 turns a skip for a
# missing tool into a failure (CI sets it).
# The last levels are the board's architectures under qemu-user (make
# test-cross), the end-to-end suite (make e2e) and its essentials on the
# board's architecture (make e2e-arm64), each run on its own so that its
# emulation does not compete with the other packages' tests.
test: test-deps
	$(GO) vet ./...
	@if command -v gcc >/dev/null; then \
		echo CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m -skip '$(E2E)|$(E2E_ARM64)|$(CROSS)' ./...; \
		CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m -skip '$(E2E)|$(E2E_ARM64)|$(CROSS)' ./...; \
	else \
		echo "make test: no C compiler, so no race detector (as root, make test installs gcc)"; \
		$(GO) test -count=1 -timeout 20m -skip '$(E2E)|$(E2E_ARM64)|$(CROSS)' ./...; \
	fi
	$(MAKE) --no-print-directory test-cross
	$(MAKE) --no-print-directory e2e
	$(MAKE) --no-print-directory e2e-arm64

# The packages' tests for linux/arm64 and linux/arm (GOARM=7), the board's
# two architectures, under qemu-user, so that a 32-bit int or an unaligned
# 64-bit atomic fails here (cross_test.go chooses the packages). Skips,
# naming qemu-user-static, where it is missing.
CROSS := ^TestPackagesOnTheBoardsArchitectures$$
test-cross: test-deps
	$(GO) test -count=1 -v -run '$(CROSS)' -timeout 20m .

# The whole pet on a Debian VM under qemu with 512 MB and cgroup v2: the
# freshly built .deb installed, its services enabled, and the owner's life
# lived over a local Bot API server and the scripted model on this machine
# (cmd/shelldon/e2e_test.go). Skips, naming what is missing, where qemu or
# root is not there.
E2E := ^TestWholePetInAVM$$
e2e: test-deps
	$(GO) test -count=1 -v -run '$(E2E)' -timeout 30m ./cmd/shelldon

# The essentials of make e2e on the board's architecture: the arm64 .deb
# on an arm64 Debian VM (qemu-system-aarch64, a Cortex-A53 under TCG, 512
# MB, cgroup v2), its sandbox image arm64 too; both roots are built here
# with mmdebstrap under qemu-user-static (binfmt_misc, which make
# test-deps registers as root) once, then cached
# (cmd/shelldon/board_vm_test.go). Skips, naming what is missing, where
# qemu-system-arm, the emulation or root is not there.
E2E_ARM64 := ^TestBoardPetInAnArm64VM$$
e2e-arm64: test-deps
	$(GO) test -count=1 -v -run '$(E2E_ARM64)' -timeout 60m ./cmd/shelldon

test-deps:
	@./.ci/test-deps

# The sandbox image (images/sandbox.recipe) in /var/lib/shelldon/images;
# needs root, mmdebstrap and systemd-container. Does nothing when the
# cached image already matches the recipe.
image: build
	./$(BIN)/shelldon image build

# Figures for BENCHMARKS.md: turn overhead over 200 turns, with no tools
# and with 100 self-coded tools kept (5 runs each), the
# footprint of daemon and broker after 100 turns (3 runs), the installed
# pet's footprint in a 512 MB VM after 100 turns (3 runs), every other
# benchmark, the binaries' start to exit (5 runs), every binary's stripped
# size on each platform with its arm64 build broken down by package, and
# the .deb sizes.
bench: build
	$(GO) test -run '^$$' -bench '^BenchmarkTurn$$|^BenchmarkTurnWith100Tools$$' -benchtime 200x -count 5 -timeout 30m ./cmd/shelldon
	$(GO) test -run '^$$' -bench '^BenchmarkFootprint$$' -benchtime 1x -count 3 -timeout 30m ./cmd/shelldon
	$(GO) test -run '^$$' -bench '^BenchmarkTurnInSystemdUnit$$' -benchtime 200x -count 5 -timeout 30m ./cmd/shelldon
	@$(MAKE) --no-print-directory bench-peer
	$(GO) test -run '^$$' -bench '^BenchmarkFootprintInVM$$' -benchtime 1x -count 3 -timeout 60m ./cmd/shelldon
	$(GO) test -run '^$$' -bench . -benchmem -count 5 -skip 'BenchmarkTurn|BenchmarkFootprint|BenchmarkStart|BenchmarkBinarySize' -timeout 30m ./...
	$(GO) test -run '^$$' -bench '^BenchmarkStart$$' -benchtime 200x -count 5 ./cmd/shelldon
	$(GO) test -v -run '^$$' -bench '^BenchmarkBinarySize$$' -benchtime 1x .
	@$(MAKE) --no-print-directory deb >/dev/null && stat -c '%n: %s bytes' $(DIST)/*.deb

# The installed pet's footprint on the board's architecture: the arm64
# .deb in the arm64 VM after 100 turns (3 runs; about 20 min under TCG). Its
# memory figures are the board's binaries'; its times are no board's.
bench-arm64:
	$(GO) test -run '^$$' -bench '^BenchmarkFootprintInAnArm64VM$$' -benchtime 1x -count 3 -timeout 150m ./cmd/shelldon

# The installed pet on this machine held to a Raspberry Pi Zero 2 W (as
# root): its three processes, workers and sandboxes in one control group
# with the CPU throughput of one Cortex-A53 core at 1 GHz, calibrated at
# run time against 7-Zip's published figure for the board, and 416 MB of
# memory; the owner on a local Bot API server, the model scripted.
# Prints the medians of 5 interleaved rounds of a chat turn, /status, an
# approved command with and without tests, a self-coded tool's call, the
# pytest gate and the same work run directly in the sandbox
# (cmd/shelldon/board_bench_test.go; BENCHMARKS.md, "On a board's
# budget"). About two and a half minutes; not part of make test.
bench-board: build
	$(GO) test -run '^$$' -bench '^BenchmarkBoardClass$$' -benchtime 5x -timeout 20m ./cmd/shelldon

# shelldon up and PicoClaw's gateway side by side, 5 interleaved rounds of
# 20 turns each over Telegram to a local Bot API server, in a network
# namespace of its own (as root): PEER_PICOCLAW_BIN names the PicoClaw
# binary, or PEER_PICOCLAW_SRC a git repository of sipeed/picoclaw to
# build it from (make peer-picoclaw; BENCHMARKS.md, "Beside PicoClaw",
# says which was measured).
bench-peer: build
	@if [ -z "$$PEER_PICOCLAW_BIN" ] && [ -n "$$PEER_PICOCLAW_SRC" ]; then $(MAKE) --no-print-directory peer-picoclaw && export PEER_PICOCLAW_BIN=$(abspath $(BIN))/picoclaw; fi; \
	if [ -z "$$PEER_PICOCLAW_BIN" ]; then echo "bench-peer: skipped, neither PEER_PICOCLAW_BIN nor PEER_PICOCLAW_SRC names PicoClaw (see BENCHMARKS.md)"; \
	else unshare --net sh -c "ip link set lo up && exec $(GO) test -run '^\$$' -bench '^BenchmarkTurnBesidePicoClaw\$$' -benchtime 5x -timeout 30m ./cmd/shelldon"; fi

# The peer of make bench-peer, built from its source as its own Makefile
# builds it (static, CGO_ENABLED=0, stripped), at the commit BENCHMARKS.md
# measured: PEER_PICOCLAW_SRC is a git repository of sipeed/picoclaw (a
# clone or a bare mirror; nothing is fetched). The commit's assets/
# folder (pictures for its README) is left out of the build tree, as a
# mirror may lack its blobs. The binary lands in bin/picoclaw.
PICOCLAW_COMMIT := cf67dd3851e7926bf04ea9016c2e61248f9f614e
peer-picoclaw:
	@test -n "$$PEER_PICOCLAW_SRC" || { echo "peer-picoclaw: PEER_PICOCLAW_SRC names no git repository of sipeed/picoclaw"; exit 2; }
	@mkdir -p $(BIN)
	tree=$$(mktemp -d) && trap 'rm -rf "$$tree"' EXIT && \
	git --git-dir="$$(git -C "$$PEER_PICOCLAW_SRC" rev-parse --absolute-git-dir)" archive $(PICOCLAW_COMMIT) -- . ':!assets' | tar -x -C "$$tree" && \
	$(MAKE) -C "$$tree" build GO=$(GO) >/dev/null && \
	cp "$$tree/build/picoclaw" $(BIN)/picoclaw && ls -l $(BIN)/picoclaw

release:
	@mkdir -p $(DIST)
	$(foreach p,$(PROGRAMS),\
		GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/$(p)-linux-amd64 ./cmd/$(p) && \
		GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/$(p)-linux-arm64 ./cmd/$(p) && \
		GOOS=linux GOARCH=arm GOARM=7 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/$(p)-linux-armv7 ./cmd/$(p) &&) true
	@ls -l $(DIST)

# .deb packages for the three targets, built with nfpm (images/shelldon.nfpm.yaml).
deb: deb-amd64 deb-arm64 deb-armhf

deb-amd64: GOARCH_FLAGS := GOARCH=amd64
deb-arm64: GOARCH_FLAGS := GOARCH=arm64
deb-armhf: GOARCH_FLAGS := GOARCH=arm GOARM=7
# nfpm takes the binaries from fixed paths (dist/package/shelldon and
# dist/package/shelldon-worker), so a build holds dist/.deb.lock from
# compiling to packaging.
deb-%:
	GOBIN=$(abspath $(BIN)) $(GO) install $(NFPM)
	@mkdir -p $(DIST) dist/package
	flock dist/.deb.lock sh -c "$(foreach p,$(PROGRAMS),GOOS=linux $(GOARCH_FLAGS) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/package/$(p) ./cmd/$(p) && )\
		DEB_ARCH=$* DEB_VERSION=$(DEB_VERSION) ./$(BIN)/nfpm package --config images/shelldon.nfpm.yaml --packager deb --target $(DIST)/"
	@ls -l $(DIST)/*$*.deb

install: build
	$(foreach p,$(PROGRAMS),install -D -m 0755 $(BIN)/$(p) $(DESTDIR)$(PREFIX)/bin/$(p) &&) true
	install -D -m 0644 units/shelldon.service $(DESTDIR)/lib/systemd/system/shelldon.service
	install -D -m 0644 units/shelldon-broker.service $(DESTDIR)/lib/systemd/system/shelldon-broker.service
	install -D -m 0644 units/shelldon-panel.service $(DESTDIR)/lib/systemd/system/shelldon-panel.service
	install -D -m 0644 units/shelldon.slice $(DESTDIR)/lib/systemd/system/shelldon.slice
	install -D -m 0644 units/shelldon-turns.slice $(DESTDIR)/lib/systemd/system/shelldon-turns.slice
	install -D -m 0644 units/shelldon.sysusers $(DESTDIR)/usr/lib/sysusers.d/shelldon.conf
	install -D -m 0644 units/shelldon.tmpfiles $(DESTDIR)/usr/lib/tmpfiles.d/shelldon.conf
	test -e $(DESTDIR)/etc/shelldon/shelldon.toml || install -D -m 0644 config/shelldon.example.toml $(DESTDIR)/etc/shelldon/shelldon.toml

clean:
	rm -rf $(BIN) $(DIST)
