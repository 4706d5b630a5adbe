package state

// Queues are the transports' own data in the state database: the
// updates a transport took and has not handled, its outbox, the request
// cards it shows, the reply keys it took once, and the strangers it
// turned away. They share the database and its transactions with the
// rest of the store, and have a type of their own, as the transports are
// theirs: the store of core's own data stays what core decides on.
type Queues struct{ *Store }

// Queues is the transports' part of the store.
func (s *Store) Queues() *Queues { return &Queues{s} }
