package telegram

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"shelldon/daemon/state/atomicfile"
)

// OffsetStore keeps the id of the last handled update, so a restart does
// not hand the same message to core twice.
type OffsetStore interface {
	Load() (int64, error)
	Save(int64) error
}

// FileOffsets keeps the offset in the file at path, replaced atomically on
// every save. A missing file means nothing was handled yet.
func FileOffsets(path string) OffsetStore { return fileOffsets(path) }

type fileOffsets string

func (f fileOffsets) Load() (int64, error) {
	data, err := os.ReadFile(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read telegram offset: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse telegram offset %s: %w", string(f), err)
	}
	return n, nil
}

func (f fileOffsets) Save(offset int64) error {
	if err := atomicfile.WriteFile(string(f), []byte(strconv.FormatInt(offset, 10)+"\n"), 0o600); err != nil {
		return fmt.Errorf("save telegram offset: %w", err)
	}
	return nil
}
