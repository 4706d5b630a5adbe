//go:build amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le || ppc64

// A limit above 4 GiB does not fit a 32-bit int, so this test exists only
// where int has 64 bits (it was a skip, which the armhf level counted as
// missing).

package bus_test

import (
	"bytes"
	"testing"

	"shelldon/bus"
	"shelldon/contracts"
)

// A limit above what the 4-byte header can express admits every frame; it
// must not wrap around to a small one.
func TestReadFrameLimitAbove4GiB(t *testing.T) {
	var limit uint64 = 1 << 32
	env, err := bus.ReadFrame(bytes.NewReader(frameOf(15, `{"kind":"JOB"}`+" ")), int(limit))
	if err != nil || env.Kind != contracts.KindJob {
		t.Errorf("ReadFrame(15-byte frame, limit %d) = %+v, %v; want a JOB", limit, env, err)
	}
}
