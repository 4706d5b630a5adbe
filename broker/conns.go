package broker

import (
	"context"
	"net"
	"net/http"
	"sync"

	"shelldon/giveback"
)

// providerConns is the pool the providers' requests go by when the caller
// gives no transport of its own: http.DefaultTransport's settings, with
// each connection's close a chore of the process. The pool closes a
// connection left idle for 90 s, and a provider closes its own end when it
// likes, both long after the broker let go of its memory at the turn's
// end; the code that runs then stayed mapped until the next turn (1.1 MB
// of the broker's binary on the arm64 VM).
var providerConns = sync.OnceValue(func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	dial := t.DialContext
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return choreOnClose{conn}, nil
	}
	return t
})

// choreOnClose is a connection whose close is a chore (afterChore): what
// closing it ran goes back once the process has let go, at once when no
// job runs.
type choreOnClose struct{ net.Conn }

// afterChore is giveback.AfterChore; tests count the chores instead.
var afterChore = giveback.AfterChore

func (c choreOnClose) Close() error {
	err := c.Conn.Close()
	afterChore()
	return err
}
