package hub

import (
	"context"
	"errors"
	"sync"
)

// errPeerGone ends a wait for the budget of a peer whose connection ended.
var errPeerGone = errors.New("the connection ended")

// budget is a count of bytes shared by the connections' readers: a reader
// takes a frame's length before it reads the frame, and waits while
// others hold too much of it.
type budget struct {
	mu   sync.Mutex
	free int
	// freed is closed, and replaced, whenever bytes are given back.
	freed chan struct{}
}

func newBudget(size int) *budget { return &budget{free: size, freed: make(chan struct{})} }

// take takes n bytes, waiting until they are free, ctx is done or gone is
// closed.
func (b *budget) take(ctx context.Context, gone <-chan struct{}, n int) error {
	for {
		b.mu.Lock()
		if b.free >= n {
			b.free -= n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-gone:
			return errPeerGone
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give gives back n bytes that take took.
func (b *budget) give(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	close(b.freed)
	b.freed = make(chan struct{})
}
