package images

import _ "embed"

// SandboxRecipe is the recipe of the sandbox image (sandbox.recipe).
//
//go:embed sandbox.recipe
var SandboxRecipe []byte
