package pairing

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"shelldon/atomicfile"
)

// Bounds of a code.
const (
	// Lifetime is how long a code may be used.
	Lifetime = 10 * time.Minute
	// MaxGuesses is how many wrong codes spend the code.
	MaxGuesses = 5
	// codeLength is in characters of alphabet.
	codeLength = 8
	// maxFile bounds the pairing file read.
	maxFile = 1 << 10
)

// alphabet is Crockford's base32: no I, L, O or U, which read as 1, 1, 0
// and V.
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// Outcome is what a message did to the code.
type Outcome int

// The outcomes of Try.
const (
	// NoCode: no code is waiting (none minted, used, spent or expired),
	// or the message does not look like one; nothing was counted.
	NoCode Outcome = iota
	// Wrong: the message looked like a code and was not it; counted.
	Wrong
	// Spent: the message was the last wrong guess the code takes; the
	// code is gone.
	Spent
	// Paired: the message was the code; the code is gone.
	Paired
)

func (o Outcome) String() string {
	return [...]string{"no code", "wrong", "spent", "paired"}[o]
}

// pending is the pairing file's content.
type pending struct {
	Hash    string    `json:"sha256"`
	Expires time.Time `json:"expires"`
	Guesses int       `json:"guesses"`
}

// Mint makes a new code, replacing any waiting, and keeps its hash in
// file until now+Lifetime. The code is shown as ABCD-EFGH.
func Mint(file string, now time.Time) (string, error) {
	raw := make([]byte, codeLength)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("pairing: mint a code: %w", err)
	}
	code := make([]byte, codeLength)
	for i, b := range raw {
		code[i] = alphabet[int(b)%len(alphabet)] // 256 is a multiple of 32: no bias
	}
	if err := write(file, pending{Hash: hash(string(code)), Expires: now.Add(Lifetime)}); err != nil {
		return "", err
	}
	return string(code[:4]) + "-" + string(code[4:]), nil
}

// Try checks text, a stranger's message, against the code waiting in
// file at now.
func Try(file, text string, now time.Time) (Outcome, error) {
	guess, ok := normalize(text)
	if !ok {
		return NoCode, nil
	}
	p, err := read(file)
	if errors.Is(err, fs.ErrNotExist) {
		return NoCode, nil
	}
	if err != nil {
		return NoCode, err
	}
	if !now.Before(p.Expires) {
		return NoCode, remove(file)
	}
	if subtle.ConstantTimeCompare([]byte(hash(guess)), []byte(p.Hash)) == 1 {
		return Paired, remove(file)
	}
	p.Guesses++
	if p.Guesses >= MaxGuesses {
		return Spent, remove(file)
	}
	return Wrong, write(file, p)
}

// Waiting reports whether a code waits in file at now, and until when.
func Waiting(file string, now time.Time) (until time.Time, ok bool) {
	p, err := read(file)
	if err != nil || !now.Before(p.Expires) {
		return time.Time{}, false
	}
	return p.Expires, true
}

// normalize reads text as a code: case, spaces and hyphens do not count;
// anything else of another length or alphabet is not a code.
func normalize(text string) (string, bool) {
	if len(text) > 32 {
		return "", false
	}
	var b strings.Builder
	for _, r := range strings.ToUpper(text) {
		switch {
		case r == '-' || r == ' ' || r == '\t' || r == '\n':
		case strings.ContainsRune(alphabet, r):
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), b.Len() == codeLength
}

func hash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

func read(file string) (pending, error) {
	f, err := os.Open(file)
	if err != nil {
		return pending{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err == nil && len(data) > maxFile {
		err = fmt.Errorf("over %d bytes", maxFile)
	}
	var p pending
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err != nil {
		return pending{}, fmt.Errorf("pairing: read %s: %w (run shelldon pair for a new code)", file, err)
	}
	return p, nil
}

func write(file string, p pending) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(file, data, 0o600); err != nil {
		return fmt.Errorf("pairing: keep the code: %w", err)
	}
	return nil
}

func remove(file string) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pairing: spend the code: %w", err)
	}
	return nil
}
