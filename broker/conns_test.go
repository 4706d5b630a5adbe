package broker

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"shelldon/contracts"
	"shelldon/demomodel"
	"shelldon/giveback"
)

// TestAProviderConnectionClosingIsAChore: the broker's connection to its
// provider stays in the pool after a job, for the next turn of the
// exchange, and closes long after the broker let go at the turn's end
// (the pool's 90 s, or the provider's own time). That close is a chore,
// so what it ran goes back at once rather than at the next turn.
func TestAProviderConnectionClosingIsAChore(t *testing.T) {
	var chores atomic.Int32
	afterChore = func() { chores.Add(1) }
	t.Cleanup(func() { afterChore = giveback.AfterChore })
	model := httptest.NewServer(demomodel.New(demomodel.Step{Text: "hi"}))
	defer model.Close()
	p := NewOpenAI(OpenAIConfig{Name: "demo", BaseURL: model.URL + "/v1", Model: demomodel.ModelName, APIKey: "test-key"})
	got := NewChain(p).Complete(context.Background(), []contracts.Message{{Role: contracts.ChatUser, Content: "hello"}}, nil)
	if !got.OK {
		t.Fatalf("Complete = %+v, want an answer", got)
	}
	if n := chores.Load(); n != 0 {
		t.Fatalf("after the job %d chores were told, want none: the connection stays in the pool", n)
	}
	providerConns().CloseIdleConnections() // what the pool's idle timer does
	if n := chores.Load(); n != 1 {
		t.Errorf("closing the idle connection told %d chores, want 1", n)
	}
}
