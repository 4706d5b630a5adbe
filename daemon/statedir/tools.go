package statedir

import (
	"path/filepath"
	"strings"
)

// ToolState says where a self-coded tool stands.
type ToolState string

// The states of a self-coded tool, by the directory that holds it.
const (
	ToolLive        ToolState = "live"        // in tools/, offered to the model
	ToolStaged      ToolState = "staged"      // in tools-staging/, waiting for the gate or the owner
	ToolQuarantined ToolState = "quarantined" // in tools-quarantine/, put away after strikes
)

// ToolFile is one self-coded tool found in the workspace.
type ToolFile struct {
	Name  string
	State ToolState
}

// SelfCodedTools lists the self-coded tools, live first, then staged,
// then quarantined, each by name. A live or quarantined tool is known by
// its manifest, a staged one by its module. Unreadable directories count
// as empty: the listing is for people, and the loader reports errors.
func (l Layout) SelfCodedTools() []ToolFile {
	var out []ToolFile
	for _, where := range []struct {
		dir, suffix string
		state       ToolState
	}{
		{l.Tools(), ".json", ToolLive},
		{l.ToolsStaging(), ".py", ToolStaged},
		{l.ToolsQuarantine(), ".json", ToolQuarantined},
	} {
		paths, _ := filepath.Glob(filepath.Join(where.dir, "*"+where.suffix))
		for _, p := range paths {
			name := strings.TrimSuffix(filepath.Base(p), where.suffix)
			if strings.HasPrefix(name, "test_") {
				continue
			}
			out = append(out, ToolFile{Name: name, State: where.state})
		}
	}
	return out
}
