package toolstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"shelldon/beneath"
)

// The directories of the workspace where tools lived before the store:
// there the model's commands could write them.
var legacyDirs = []string{"tools", "tools-quarantine", "tools-staging"}

// AdoptLegacy moves the tools an older shelldon kept in the workspace into
// quarantine, and drops its staging. Anything in those directories may
// have been written by an approved command rather than kept by the owner,
// so none goes live: the owner brings back what they trust with /restore.
// It reads the workspace without following a link, removes the files it
// adopted, and a directory only when that leaves it empty: whatever else
// is there is the owner's. Core runs it once, on the first start after the
// upgrade (a tools/ directory made later is the owner's own). It returns
// the names it moved.
func (s *Store) AdoptLegacy(workspace *beneath.Root, now time.Time) ([]string, error) {
	var adopted []string
	var errs []error
	for _, dir := range legacyDirs[:2] {
		entries, err := workspace.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("adopt the tools in workspace/%s: %w", dir, err))
			continue
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".py")
			if !ok || strings.HasPrefix(name, "test_") || checkName(name) != nil {
				continue
			}
			if err := s.adopt(workspace, dir, name, now); err != nil {
				errs = append(errs, err)
				continue
			}
			adopted = append(adopted, name)
			for _, f := range files3(name) {
				if err := workspace.Remove(dir + "/" + f); err != nil {
					errs = append(errs, fmt.Errorf("remove workspace/%s/%s: %w", dir, f, err))
				}
			}
		}
	}
	if info, err := workspace.Lstat(legacyDirs[2]); err == nil && info.IsDir() {
		if err := workspace.RemoveAll(legacyDirs[2]); err != nil {
			errs = append(errs, fmt.Errorf("remove workspace/%s: %w", legacyDirs[2], err))
		}
	}
	for _, dir := range legacyDirs[:2] {
		if info, err := workspace.Lstat(dir); err == nil && info.IsDir() {
			workspace.Remove(dir) // only when empty; what is left is the owner's
		}
	}
	return adopted, errors.Join(errs...)
}

// files3 are the three files of a tool, as a list.
func files3(name string) []string {
	mod, tst, man := files(name)
	return []string{mod, tst, man}
}

// adopt moves one tool from the workspace directory dir into quarantine,
// with a manifest of the store's that says what its files are now.
func (s *Store) adopt(workspace *beneath.Root, dir, name string, now time.Time) error {
	mod, tst, man := files(name)
	module, err := workspace.ReadFile(dir+"/"+mod, MaxFileBytes)
	if err != nil {
		return fmt.Errorf("adopt %s: %w", name, err)
	}
	test, err := workspace.ReadFile(dir+"/"+tst, MaxFileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("adopt %s: %w", name, err)
	}
	m := Manifest{Name: name, Description: "(adopted from the workspace)", PromotedAt: now.UTC().Format(time.RFC3339), PromotedBy: "adopted from an older shelldon"}
	if raw, err := workspace.ReadFile(dir+"/"+man, maxManifestBytes); err == nil {
		var old Manifest
		if json.Unmarshal(raw, &old) == nil && old.Name == name {
			m.Description, m.Schema = old.Description, old.Schema
		}
	}
	m.SHA256, m.TestSHA256 = sum(module), sum(test)
	manifest, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("adopt %s: %w", name, err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{mod, module}, {tst, test}, {man, append(manifest, '\n')}} {
		if err := s.root.WriteFile(quarantineDir+"/"+f.name, f.data, 0o600); err != nil {
			return fmt.Errorf("adopt %s: %w", name, err)
		}
	}
	return nil
}
