package config

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"shelldon/manual"
)

// TestPresetsMatchTheManual: docs/configuration.md's preset table lists
// exactly the presets, in order, with their base URL, model, key and
// needs, so the page an owner reads is the list a setup offers.
func TestPresetsMatchTheManual(t *testing.T) {
	pages, err := manual.Read("..")
	if err != nil {
		t.Fatal(err)
	}
	rows, page, err := manual.Table(pages, "preset")
	if err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, p := range Presets {
		key := "none"
		if p.NeedsKey {
			key = "yes"
		}
		want = append(want, []string{p.Name, p.BaseURL, p.Model, key, p.Needs})
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("%s's preset table:\n%q\nwant (config.Presets):\n%q", page, rows, want)
	}
}

// TestEveryPresetIsInTheConformanceSuite: each preset has its recorded
// exchanges in the broker's conformance suite, under the same base path,
// so no preset points at a server whose answers the broker was never
// held to.
func TestEveryPresetIsInTheConformanceSuite(t *testing.T) {
	for _, p := range Presets {
		raw, err := os.ReadFile(filepath.Join("..", "broker", "testdata", "providers", p.Name, "provider.json"))
		if err != nil {
			t.Errorf("preset %s has no exchanges in the broker's conformance suite: %v", p.Name, err)
			continue
		}
		var fixture struct {
			BasePath string `json:"base_path"`
		}
		if err := json.Unmarshal(raw, &fixture); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(p.BaseURL)
		if err != nil || u.Path != fixture.BasePath || strings.HasSuffix(p.BaseURL, "/") {
			t.Errorf("preset %s: base URL %q, want one without a trailing slash whose path is the suite's %q", p.Name, p.BaseURL, fixture.BasePath)
		}
	}
}

// TestPresetsAreValidProviders: a preset's [[provider]] table passes the
// checks the configuration file's own does.
func TestPresetsAreValidProviders(t *testing.T) {
	for _, p := range Presets {
		cfg := Default()
		cfg.StateDir = t.TempDir()
		cfg.Providers = []Provider{p.Provider()}
		cfg.Providers[0].Timeout = cfg.Timeouts.Worker
		if err := cfg.Validate(); err != nil {
			t.Errorf("preset %s: %v", p.Name, err)
		}
		if got, ok := PresetNamed(p.Name); !ok || got != p {
			t.Errorf("PresetNamed(%q) = %+v, %v", p.Name, got, ok)
		}
	}
}
