package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOwnersToFix(t *testing.T) {
	tests := []struct {
		err  error
		want string // a substring; "" for nothing the owner must fix
	}{
		{&CallError{Provider: "ollama", Status: 400, Reason: `model "gemma:2b" cannot call tools here`, Err: fmt.Errorf("%w: x", ErrToolsUnsupported)}, "cannot call tools"},
		{&CallError{Provider: "openai", Status: 401, Reason: "401 invalid api key"}, "refused the key"},
		{&CallError{Provider: "openai", Status: 403, Reason: "403 forbidden"}, "refused the key"},
		{&CallError{Provider: "groq", Status: 404, Reason: "404 model not found"}, "does not know the model"},
		{&CallError{Provider: "openai", Status: 503, Reason: "503 overloaded", Transient: true}, ""},
		{&CallError{Provider: "openai", Reason: "dial tcp: refused", Transient: true}, ""},
		{errors.New("panic: boom"), ""},
		{nil, ""},
	}
	for _, tt := range tests {
		got := ownersToFix(tt.err)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("ownersToFix(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
