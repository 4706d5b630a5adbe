package media

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"shelldon/contracts"
)

var png = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 64)...)

func newKeeper(t *testing.T) (*Keeper, string, *[]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "photos")
	var failed []string
	k := New(dir, func(what string, err error) error {
		if err != nil {
			failed = append(failed, what)
		}
		return err
	}, slog.New(slog.DiscardHandler))
	return k, dir, &failed
}

func TestAPhotoIsKeptUntilItsMessageIsAnswered(t *testing.T) {
	k, dir, failed := newKeeper(t)
	k.Keep(1, contracts.Inbound{Text: "[photo: a cat]", Image: &contracts.Image{MIME: "image/png", Data: png}})
	k.Keep(2, contracts.Inbound{Text: "and this", Image: &contracts.Image{MIME: "image/png", Data: append([]byte{}, png[:16]...)}})
	k.Keep(3, contracts.Inbound{Text: "no photo"})
	if len(*failed) != 0 {
		t.Fatalf("writes failed: %q", *failed)
	}
	got := k.Photos([]int64{1, 2, 3})
	if len(got) != 1 || !bytes.Equal(got[0].Data, png[:16]) || got[0].MIME != "image/png" {
		t.Errorf("Photos(1, 2, 3) = %+v, want the last message's photo alone", got)
	}
	if got := k.Photos([]int64{3}); got != nil {
		t.Errorf("Photos of a message without one = %+v", got)
	}
	// A core restarted with message 1 still unanswered keeps its photo.
	k.Prune([]int64{1})
	if _, err := os.Stat(filepath.Join(dir, "2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the photo of an answered message survived Prune: %v", err)
	}
	if got := k.Photos([]int64{1}); len(got) != 1 {
		t.Errorf("Prune dropped an unanswered message's photo")
	}
	k.Forget([]int64{1})
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("after Forget the photos directory holds %d files", len(entries))
	}
}

func TestAPhotoPastItsBoundIsNotReadBack(t *testing.T) {
	k, dir, _ := newKeeper(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "7"), make([]byte, MaxPhotoFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := k.Photos([]int64{7}); got != nil {
		t.Errorf("a photo of %d bytes was read back for a turn", MaxPhotoFile+1)
	}
}

func TestAPhotoThatCannotBeWrittenIsCounted(t *testing.T) {
	k, dir, failed := newKeeper(t)
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	k.Keep(1, contracts.Inbound{Image: &contracts.Image{Data: png}})
	if !slices.Equal(*failed, []string{"keep the owner's photo"}) {
		t.Errorf("failed writes = %q, want the photo's", *failed)
	}
}

func TestAVoiceNotesReplyStartsWithWhatWasHeard(t *testing.T) {
	k, _, _ := newKeeper(t)
	k.Keep(1, contracts.Inbound{Text: "water the plants", Spoken: true})
	k.Keep(2, contracts.Inbound{Text: "typed"})
	if got, want := k.Echo([]int64{1, 2}, "done"), SpokenEcho+"water the plants\n\ndone"; got != want {
		t.Errorf("Echo = %q, want %q", got, want)
	}
	if got := k.Echo([]int64{2}, "done"); got != "done" {
		t.Errorf("Echo of a typed message = %q", got)
	}
	k.Forget([]int64{1})
	if got := k.Echo([]int64{1}, "again"); got != "again" {
		t.Errorf("Echo after Forget = %q", got)
	}
}
