package sandbox

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"shelldon/clock"
)

const (
	blobA = "13c1469ee4efdf182b6584f89b29d1d4b2e5a3e6"
	blobB = "13df44237930ba2c10787260d5c3d08641dacf54"
	blobC = "d0e0fd661801c4c3bce1ec217d272b788e2a4955"
	zero  = "0000000000000000000000000000000000000000"
)

// lookRecords joins records as the look prints them, NUL after each.
func lookRecords(records ...string) []byte {
	return []byte(strings.Join(records, "\x00") + "\x00")
}

// TestParseGitLook: the look's records give, per repository, the blobs
// nothing reaches and those a credential path held, and nothing else; a
// repository whose records are cut, garbled or failed is a failed look,
// whose objects the run will not see.
func TestParseGitLook(t *testing.T) {
	good := []string{"@repo", "0", "@format", "sha1", "@unreached", blobA,
		"@log", ":000000 100644 " + zero + " " + blobB + " A", ".env",
		":100644 100644 " + blobC + " " + blobC + " M", "app.py",
		":000000 160000 " + zero + " " + blobA + " A", "vendor/.env",
		"",
		"@index", "100644 " + blobC + " 0\tconfig/tokenizer.py", "@done"}
	tests := []struct {
		name    string
		out     []byte
		n       int
		masked  [][]string // per repository; nil for a failed look
		failure string
	}{
		{name: "a repository", out: lookRecords(append([]string{"noise from nspawn\n", "@shelldon-git-look"}, good...)...), n: 1,
			masked: [][]string{{blobA, blobB}}},
		{name: "two, the first failed", n: 2, masked: [][]string{nil, {blobA, blobB}},
			out: lookRecords(append([]string{"@shelldon-git-look", "@repo", "0", "@format", "sha1", "@unreached", "@fail", "fatal: bad object", "@repo", "1"}, good[2:]...)...)},
		{name: "no start", out: lookRecords(good...), n: 1, failure: "none of its records"},
		{name: "cut short", out: lookRecords(append([]string{"@shelldon-git-look"}, good[:9]...)...), n: 1, masked: [][]string{nil}},
		{name: "a history record without its path", n: 1, masked: [][]string{nil},
			out: lookRecords("@shelldon-git-look", "@repo", "0", "@format", "sha1", "@unreached", "@log", ":000000 100644 "+zero+" "+blobB+" A")},
		{name: "a name that is no object name", n: 1, masked: [][]string{nil},
			out: lookRecords("@shelldon-git-look", "@repo", "0", "@format", "sha1", "@unreached", "../../etc/passwd", "@log", "@index", "@done")},
		{name: "a sha256 name in a sha1 repository", n: 1, masked: [][]string{nil},
			out: lookRecords("@shelldon-git-look", "@repo", "0", "@format", "sha1", "@unreached", blobA+"000000000000000000000000", "@log", "@index", "@done")},
		{name: "records before the format", n: 1, masked: [][]string{nil},
			out: lookRecords("@shelldon-git-look", "@repo", "0", "@unreached", blobA, "@log", "@index", "@done")},
		{name: "a repository it was not asked about", n: 1, failure: "repository",
			out: lookRecords("@shelldon-git-look", "@repo", "7", "@format", "sha1", "@unreached", "@log", "@index", "@done")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			looks, err := parseGitLook(tt.out, tt.n)
			if tt.failure != "" {
				if err == nil || !strings.Contains(err.Error(), tt.failure) {
					t.Fatalf("parseGitLook = %v, %v, want an error saying %q", looks, err, tt.failure)
				}
				return
			}
			if err != nil || len(looks) != tt.n {
				t.Fatalf("parseGitLook = %v, %v", looks, err)
			}
			for i, want := range tt.masked {
				switch got := looks[i]; {
				case want == nil && got.err == nil:
					t.Errorf("repository %d: masked %q, want a failed look", i, got.masked)
				case want != nil && (got.err != nil || strings.Join(got.masked, " ") != strings.Join(want, " ")):
					t.Errorf("repository %d: masked %q, %v, want %q", i, got.masked, got.err, want)
				}
			}
		})
	}
}

// TestParseGitLookBoundsTheMasks: a repository with more blobs to mask
// than a run writes is a failed look that says how to fix it.
func TestParseGitLookBoundsTheMasks(t *testing.T) {
	records := []string{"@shelldon-git-look", "@repo", "0", "@format", "sha1", "@unreached"}
	for i := range maxMaskedBlobs + 1 {
		records = append(records, fmt.Sprintf("%040x", i+1))
	}
	records = append(records, "@log", "@index", "@done")
	looks, err := parseGitLook(lookRecords(records...), 1)
	if err != nil || looks[0].err == nil || !strings.Contains(looks[0].err.Error(), "git gc --prune=now") {
		t.Fatalf("parseGitLook of %d blobs = %v, %v, want a failed look naming git gc", maxMaskedBlobs+1, looks[0].err, err)
	}
}

// TestGitLooksAreKeptWhileTheStateHolds: a look is kept while its
// repository's state holds; a failed one is tried again after
// gitLookRetry, so that a look a busy board cut short does not hide the
// repository's objects until it changes.
func TestGitLooksAreKeptWhileTheStateHolds(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	looks := gitLooks{clock: fake}
	state, changed := [32]byte{1}, [32]byte{2}
	looks.put("ws\x00.git", state, gitLook{format: "sha1"})
	looks.put("ws\x00sub/.git", state, gitLook{err: errors.New("took too long")})
	fake.Advance(gitLookRetry - time.Second)
	for key, want := range map[string]bool{"ws\x00.git": true, "ws\x00sub/.git": true, "ws\x00other/.git": false} {
		if _, ok := looks.get(key, state); ok != want {
			t.Errorf("get(%q) before the retry = %v, want %v", key, ok, want)
		}
	}
	if _, ok := looks.get("ws\x00.git", changed); ok {
		t.Error("a look was kept for a repository whose state changed")
	}
	fake.Advance(2 * time.Second)
	if _, ok := looks.get("ws\x00.git", state); !ok {
		t.Error("a look that succeeded was dropped with time")
	}
	if _, ok := looks.get("ws\x00sub/.git", state); ok {
		t.Error("a failed look was kept past gitLookRetry")
	}
}
