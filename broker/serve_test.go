package broker_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
	"shelldon/demomodel"
)

// TestJobsOfAGoneCoreEndWithIt: a core killed while the broker runs its
// jobs (the model is slow) never reads their answers; the broker gives
// them up with the connection, so the next core's turns find the broker
// free — where the dead core's jobs held every slot until their deadlines
// and the new core's first turn was told "broker busy".
func TestJobsOfAGoneCoreEndWithIt(t *testing.T) {
	var asked atomic.Int32
	srv, provider, _ := demo(t, "scripted")
	srv.Fallback = func(demomodel.Request) demomodel.Step {
		if asked.Add(1) <= 4 {
			return demomodel.Step{Hang: true}
		}
		return demomodel.Step{Text: "the new core's answer"}
	}
	socket := hubtest.SocketPath(t)
	joined := make(chan struct{}, 1)
	onJoin := func(p *hub.Peer) {
		if p.Hello.Role == contracts.RoleBroker {
			joined <- struct{}{}
		}
	}
	_, _, stopCore := hubtest.Serve(t, socket, hub.Config{OnJoin: onJoin})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go broker.Serve(ctx, socket, 1<<20, chainOf(provider), slog.New(slog.DiscardHandler))
	// A job sent before the broker joined waits for it; on a loaded machine
	// the broker joins late, and the deadline below is the model's, not the join's.
	awaitBroker := func() {
		t.Helper()
		select {
		case <-joined:
		case <-time.After(5 * time.Second):
			t.Fatal("the broker did not join the core")
		}
	}
	awaitBroker()

	// Four jobs, one per turn, as many as the broker runs at once.
	for i := range 4 {
		worker := dial(t, socket, fmt.Sprint("old-", i))
		job(t, worker)
	}
	for deadline := time.Now().Add(5 * time.Second); asked.Load() < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d of the four jobs", asked.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopCore()

	hubtest.Serve(t, socket, hub.Config{OnJoin: onJoin})
	awaitBroker()
	worker := dial(t, socket, "new")
	job(t, worker)
	env, err := worker.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var c contracts.Completion
	if err := env.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if !c.OK || c.Text != "the new core's answer" {
		t.Fatalf("the new core's job = %+v, want the model's answer: the old core's jobs still hold the broker", c)
	}
}

// dial joins socket as the worker of turn.
func dial(t *testing.T, socket, turn string) *bus.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := bus.Dial(ctx, socket, contracts.Hello{Role: contracts.RoleWorker, Turn: turn}, 1<<20)
	if err != nil {
		t.Fatalf("join as the worker of %s: %v", turn, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// job sends one job a minute long from worker.
func job(t *testing.T, worker *bus.Conn) {
	t.Helper()
	env, err := contracts.NewEnvelope(contracts.KindJob, "", contracts.Job{
		Messages: []contracts.Message{{Role: contracts.ChatUser, Content: "hi"}}, Deadline: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Send(env); err != nil {
		t.Fatal(err)
	}
}
