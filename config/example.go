package config

import _ "embed"

// Example is the annotated example configuration file,
// config/shelldon.example.toml: every key with its default and what it is
// for, plus one example provider (Default has none). Treat it as read-only.
//
//go:embed shelldon.example.toml
var Example string
