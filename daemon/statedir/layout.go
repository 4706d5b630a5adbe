package statedir

import "path/filepath"

// Layout is the state directory rooted at Root, and the path of everything
// in it.
type Layout struct {
	Root string
}

// DB is the SQLite database.
func (l Layout) DB() string { return filepath.Join(l.Root, "state.db") }

// Backup is the last good copy of the database, which core keeps to
// recover from damage.
func (l Layout) Backup() string { return l.DB() + ".backup" }

// HighWater is the database's high-water mark: a small file beside it,
// flushed to disk, that says how far the database had come, so that a
// database found behind it (its write-ahead log lost) is noticed.
func (l Layout) HighWater() string { return l.DB() + ".mark" }

// DamagedPrefix starts the name of a damaged database core moved aside:
// state.db.damaged-<UTC time>.
func (l Layout) DamagedPrefix() string { return l.DB() + ".damaged-" }

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

// ToolStore holds the self-coded tools, live, under their gate and put
// away: beside the workspace, never inside it, where no model-driven path
// writes (package toolstore).
func (l Layout) ToolStore() string { return filepath.Join(l.Root, "tools") }

// Changes holds the change sets of approved commands that wait for the
// owner's own look before they are applied.
func (l Layout) Changes() string { return filepath.Join(l.Root, "changes") }

// Photos holds the photos of the owner's messages not yet answered, one
// file a message, named by the message's admitted id: the database and
// its history keep only their placeholders.
func (l Layout) Photos() string { return filepath.Join(l.Root, "photos") }

// Scratch is core's own directory for what a sandboxed run is shown
// besides the workspace, for the run's time (the tests as they were, for
// the read-only-tests guard).
func (l Layout) Scratch() string { return filepath.Join(l.Root, "scratch") }

// Runs holds the sandbox's run directories (overlay layers).
func (l Layout) Runs() string { return filepath.Join(l.Root, "runs") }

// Reserve is the room the store keeps on the state's disk, a file it
// lets go of when the disk is full (state.ReserveBytes).
func (l Layout) Reserve() string { return l.DB() + ".reserve" }

// Pairing is where `shelldon pair` keeps the hash of the code that pairs
// the bot's owner, until it is used, spent or expired.
func (l Layout) Pairing() string { return filepath.Join(l.Root, "pairing.json") }

// Lock is the lock file one core holds while it serves the directory.
func (l Layout) Lock() string { return filepath.Join(l.Root, "state.lock") }

// Socket is the bus socket.
func (l Layout) Socket() string { return filepath.Join(l.Root, "bus.sock") }
