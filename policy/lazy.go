package policy

import "sync"

// lazy is a value built at its first use instead of at the package's
// init: every worker links this package, and it starts for every turn
// and every python_eval, most of which judge no command, address or
// name. Declared with build set and nothing else, a lazy is laid out by
// the linker, so the package allocates nothing at start (where
// sync.OnceValue allocates its closure at init). A value that costs no
// allocation to make, as the address ranges, needs none.
type lazy[T any] struct {
	build func() T
	once  sync.Once
	value T
}

// get builds the value the first time it is asked for.
func (l *lazy[T]) get() T {
	l.once.Do(func() { l.value = l.build() })
	return l.value
}
