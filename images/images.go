package images

import _ "embed"

// SandboxRecipe is the recipe of the sandbox image (sandbox.recipe).
//
//go:embed sandbox.recipe
var SandboxRecipe []byte

// TestHostRecipe is the recipe of the root file system tests boot to get
// a real systemd (testhost.recipe).
//
//go:embed testhost.recipe
var TestHostRecipe []byte

// TestVMRecipe is the recipe of the root file system tests boot as a
// whole virtual machine with qemu (testvm.recipe).
//
//go:embed testvm.recipe
var TestVMRecipe []byte

// TestVMArm64Recipe is the recipe of the test VM's root for the board's
// architecture, arm64, booted under emulation (testvm-arm64.recipe).
//
//go:embed testvm-arm64.recipe
var TestVMArm64Recipe []byte
