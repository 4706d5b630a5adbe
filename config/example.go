package config

import _ "embed"

// Example is the annotated example configuration file,
// config/shelldon.example.toml: every key with its default and what it is
// for, and an example provider commented out, so that the file copied as
// it is loads as Default does (which has no provider). Treat it as
// read-only.
//
//go:embed shelldon.example.toml
var Example string
