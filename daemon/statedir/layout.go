package statedir

import "path/filepath"

// Layout is the state directory rooted at Root, and the path of everything
// in it.
type Layout struct {
	Root string
}

// DB is the SQLite database.
func (l Layout) DB() string { return filepath.Join(l.Root, "state.db") }

// Directive is DIRECTIVE.md, the pet's personality and reply contract.
func (l Layout) Directive() string { return filepath.Join(l.Root, "DIRECTIVE.md") }

// About is about.md, the pet's picture of its owner.
func (l Layout) About() string { return filepath.Join(l.Root, "about.md") }

// MemoryDir holds the memory tree, one markdown file per topic.
func (l Layout) MemoryDir() string { return filepath.Join(l.Root, "memory") }

// MemoryTopic is the file of one memory topic. The topic must already be
// validated as a slug (contracts.Remember.Validate); this only joins paths.
func (l Layout) MemoryTopic(topic string) string {
	return filepath.Join(l.MemoryDir(), topic+".md")
}

// Faces is the file of the faces added to the registry.
func (l Layout) Faces() string { return filepath.Join(l.Root, "faces.json") }

// Vault holds secrets; no tool may ever read it.
func (l Layout) Vault() string { return filepath.Join(l.Root, "vault") }

// Workspace is the jail root of the file and shell tools.
func (l Layout) Workspace() string { return filepath.Join(l.Root, "workspace") }

// Tools holds the promoted self-coded tools.
func (l Layout) Tools() string { return filepath.Join(l.Workspace(), "tools") }

// ToolsStaging holds proposed tools while the gate tests them.
func (l Layout) ToolsStaging() string { return filepath.Join(l.Workspace(), "tools-staging") }

// ToolsQuarantine holds tools that failed too often.
func (l Layout) ToolsQuarantine() string { return filepath.Join(l.Workspace(), "tools-quarantine") }

// Socket is the bus socket.
func (l Layout) Socket() string { return filepath.Join(l.Root, "bus.sock") }
