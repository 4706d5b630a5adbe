package worker

// HogMessage makes a worker hold ever more memory, as a leak would, until
// the kernel kills it: for the tests of an installed pet only. Only a
// binary built with the shelldon_testhooks tag acts on it; in any other
// the constant is unused and not even its text is in the binary.
const HogMessage = "test hook: grow past the memory limit"
