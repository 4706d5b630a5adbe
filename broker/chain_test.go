package broker_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"shelldon/broker"
	"shelldon/contracts"
)

// fakeProvider answers each call with the next of its answers.
type fakeProvider struct {
	name    string
	calls   atomic.Int32
	answers []func() (contracts.Completion, error)
}

func (f *fakeProvider) Name() string { return f.name }

func (f *fakeProvider) CompleteWithTools(context.Context, []contracts.Message, []contracts.ToolDefinition) (contracts.Completion, error) {
	n := int(f.calls.Add(1)) - 1
	return f.answers[min(n, len(f.answers)-1)]()
}

func fake(name string, answers ...func() (contracts.Completion, error)) *fakeProvider {
	return &fakeProvider{name: name, answers: answers}
}

func says(text string) func() (contracts.Completion, error) {
	return func() (contracts.Completion, error) { return contracts.Completion{Text: text}, nil }
}

func fails(err error) func() (contracts.Completion, error) {
	return func() (contracts.Completion, error) { return contracts.Completion{}, err }
}

func panics(v any) func() (contracts.Completion, error) {
	return func() (contracts.Completion, error) { panic(v) }
}

// namePanics is a provider that cannot even say its name.
type namePanics struct{ fakeProvider }

func (*namePanics) Name() string { panic("no name") }

func TestChainFailuresAreValues(t *testing.T) {
	transient := &broker.CallError{Provider: "x", Reason: "503 busy", Transient: true}
	tests := []struct {
		name      string
		providers []broker.Provider
		want      contracts.Completion
	}{
		{"no providers", nil, contracts.Completion{Error: "no providers configured"}},
		{"only nil", []broker.Provider{nil}, contracts.Completion{Error: "no providers configured"}},
		{"panic", []broker.Provider{fake("wild", panics("kaboom"))},
			contracts.Completion{Error: "all providers failed: wild: panic: kaboom", Tries: 1}},
		{"panic then backup", []broker.Provider{fake("wild", panics(errors.New("nil map"))), nil, fake("calm", says("fine"))},
			contracts.Completion{OK: true, Text: "fine", Provider: "calm", Tries: 2}},
		{"plain error is not retried", []broker.Provider{fake("plain", fails(errors.New("no route")), says("unused"))},
			contracts.Completion{Error: "all providers failed: plain: no route", Tries: 1}},
		{"transient call error is retried", []broker.Provider{fake("x", fails(transient), says("recovered"))},
			contracts.Completion{OK: true, Text: "recovered", Provider: "x", Tries: 2}},
		{"failure text beside no error is empty", []broker.Provider{fake("odd", func() (contracts.Completion, error) {
			return contracts.Completion{OK: true, Error: "confused"}, nil
		})}, contracts.Completion{Error: "all providers failed: odd: empty completion", Tries: 1}},
		{"provider's error field is cleared", []broker.Provider{fake("odd", func() (contracts.Completion, error) {
			return contracts.Completion{Text: "hi", Error: "stale", Provider: "liar", Tries: 9}, nil
		})}, contracts.Completion{OK: true, Text: "hi", Provider: "odd", Tries: 1}},
		{"unnamed providers get positions", []broker.Provider{fake("", fails(errors.New("a"))), &namePanics{*fake("", fails(errors.New("b")))}},
			contracts.Completion{Error: "all providers failed: provider 1: a; provider 2: b", Tries: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chainOf(tt.providers...).Complete(context.Background(), greeting, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Complete = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestChainNames(t *testing.T) {
	chain := broker.NewChain(fake("a"), nil, fake("b"))
	if got := chain.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Names() = %v, want [a b]", got)
	}
	if chain.RetryDelay != broker.DefaultRetryDelay {
		t.Errorf("RetryDelay = %v, want %v", chain.RetryDelay, broker.DefaultRetryDelay)
	}
}

func TestRetryPauseHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	flaky := fake("flaky", func() (contracts.Completion, error) {
		cancel() // the caller gives up while the chain would wait to retry
		return contracts.Completion{}, &broker.CallError{Provider: "flaky", Reason: "503", Transient: true}
	}, says("unused"))
	chain := broker.NewChain(flaky)
	chain.RetryDelay = time.Hour

	done := make(chan contracts.Completion, 1)
	go func() { done <- chain.Complete(ctx, greeting, nil) }()
	select {
	case got := <-done:
		if got.OK || got.Error != "gave up: context canceled" || got.Tries != 1 || flaky.calls.Load() != 1 {
			t.Errorf("Complete = %+v after %d calls, want a cancellation after 1", got, flaky.calls.Load())
		}
	case <-time.After(guard):
		t.Fatal("Complete still waiting to retry after cancel")
	}
}

func TestGaveUpKeepsEarlierReasons(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	second := fake("second", func() (contracts.Completion, error) {
		cancel()
		return contracts.Completion{}, ctx.Err()
	})
	got := chainOf(fake("first", fails(errors.New("401 bad key"))), second).Complete(ctx, greeting, nil)
	want := contracts.Completion{Error: "gave up: context canceled; first: 401 bad key", Tries: 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Complete = %+v, want %+v", got, want)
	}
}
