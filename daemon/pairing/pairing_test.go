package pairing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var epoch = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func mint(t *testing.T) (file, code string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "pairing.json")
	code, err := Mint(file, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return file, code
}

func try(t *testing.T, file, text string, at time.Time) Outcome {
	t.Helper()
	got, err := Try(file, text, at)
	if err != nil {
		t.Fatalf("Try(%q) = %v", text, err)
	}
	return got
}

func TestTheCodePairsOnceInAnyCase(t *testing.T) {
	file, code := mint(t)
	if len(code) != 9 || code[4] != '-' || strings.ContainsAny(code, "ILOU") {
		t.Fatalf("Mint = %q, want ABCD-EFGH of Crockford's alphabet", code)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the pairing file: %v, %v; want mode 0600", info, err)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), strings.ReplaceAll(code, "-", "")) {
		t.Fatalf("the pairing file holds the code itself: %s", b)
	}
	typed := " " + strings.ToLower(strings.ReplaceAll(code, "-", " ")) + "\n"
	if got := try(t, file, typed, epoch.Add(time.Minute)); got != Paired {
		t.Fatalf("Try(%q) = %v, want paired", typed, got)
	}
	if got := try(t, file, code, epoch.Add(time.Minute)); got != NoCode {
		t.Errorf("the code's second use = %v, want no code", got)
	}
}

func TestACodeExpires(t *testing.T) {
	file, code := mint(t)
	if until, ok := Waiting(file, epoch); !ok || !until.Equal(epoch.Add(Lifetime)) {
		t.Errorf("Waiting = %v, %v; want until %v", until, ok, epoch.Add(Lifetime))
	}
	if got := try(t, file, code, epoch.Add(Lifetime)); got != NoCode {
		t.Errorf("the code at its expiry = %v, want no code", got)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("an expired code's file is still there")
	}
}

// TestAFloodOfGuessesSpendsTheCode: wrong guesses are counted; the one
// that reaches MaxGuesses spends the code, and the right code after it
// pairs no one.
func TestAFloodOfGuessesSpendsTheCode(t *testing.T) {
	file, code := mint(t)
	wrong := "0000-0000"
	if code == wrong {
		wrong = "0000-0001"
	}
	for i := range MaxGuesses - 1 {
		if got := try(t, file, wrong, epoch); got != Wrong {
			t.Fatalf("guess %d = %v, want wrong", i+1, got)
		}
	}
	if got := try(t, file, wrong, epoch); got != Spent {
		t.Fatalf("guess %d = %v, want spent", MaxGuesses, got)
	}
	for range 100 {
		if got := try(t, file, code, epoch); got != NoCode {
			t.Fatalf("the right code after it was spent = %v, want no code", got)
		}
	}
}

// TestWhatIsNotACodeCountsNothing: ordinary messages of strangers ("hi",
// /start) are not guesses.
func TestWhatIsNotACodeCountsNothing(t *testing.T) {
	file, code := mint(t)
	for _, text := range []string{"/start", "hi", "hello there", "ABCD-EFG", "ABCD-EFGHJ", "ILOU-ILOU", strings.Repeat("A", 1000), ""} {
		for range MaxGuesses {
			if got := try(t, file, text, epoch); got != NoCode {
				t.Fatalf("Try(%q) = %v, want no code", text, got)
			}
		}
	}
	if got := try(t, file, code, epoch); got != Paired {
		t.Errorf("the code after strangers' chatter = %v, want paired", got)
	}
}

func TestADamagedFileIsAnErrorNotAPairing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pairing.json")
	for _, body := range []string{"{not json", strings.Repeat(" ", maxFile+1)} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := Try(file, "ABCD-EFGH", epoch); got != NoCode || err == nil || !strings.Contains(err.Error(), "shelldon pair") {
			t.Errorf("Try over %.10q = %v, %v; want no code and an error naming the fix", body, got, err)
		}
	}
	if got, err := Try(filepath.Join(t.TempDir(), "none"), "ABCD-EFGH", epoch); got != NoCode || err != nil {
		t.Errorf("Try without a file = %v, %v", got, err)
	}
}
