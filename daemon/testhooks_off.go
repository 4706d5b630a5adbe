//go:build !shelldon_testhooks

package daemon

import "context"

// testHook does nothing in a shipped binary: the test hooks are built
// only with the shelldon_testhooks tag.
func (c *Core) testHook(context.Context, string) bool { return false }
