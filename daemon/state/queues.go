package state

import "context"

// Queues are the transports' own data in the state database: the
// updates a transport took and has not handled, its outbox, the request
// cards it shows, the reply keys it took once, and the strangers it
// turned away. They share the database and its transactions with the
// rest of the store, and have a type of their own, as the transports are
// theirs: the store of core's own data stays what core decides on.
type Queues struct{ store *Store }

// Queues is the transports' part of the store.
func (s *Store) Queues() *Queues { return &Queues{s} }

// Get reads a transport's small value kept under key in the key-value
// table (the status messages it shows, for one), as [Store.Get].
func (q *Queues) Get(ctx context.Context, key string) (value []byte, ok bool, err error) {
	return q.store.Get(ctx, key)
}

// Put keeps a transport's small value under key, as [Store.Put].
func (q *Queues) Put(ctx context.Context, key string, value []byte) error {
	return q.store.Put(ctx, key, value)
}
