package broker_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"shelldon/contracts"
	"shelldon/demomodel"
)

// TestAnIDTheConversationHasIsNotReused: a server that numbers its calls
// afresh in every answer ("call_0" each time) would give a second call
// the id of the first, whose result the conversation already holds; the
// new call gets an id of its own.
func TestAnIDTheConversationHasIsNotReused(t *testing.T) {
	const answer = `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
		`"tool_calls":[{"id":"call_0","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
	_, p, _ := demo(t, "local", demomodel.Step{Raw: answer})
	conversation := append(append([]contracts.Message(nil), greeting...),
		contracts.Message{Role: contracts.ChatAssistant, ToolCalls: []contracts.ToolCall{{ID: "call_0", Name: "get_time", Args: "{}"}}},
		contracts.Message{Role: contracts.ChatTool, ToolCallID: "call_0", Content: "12:00"})
	got, err := p.CompleteWithTools(context.Background(), conversation, []contracts.ToolDefinition{{Name: "get_time"}})
	want := []contracts.ToolCall{{ID: "call_2", Name: "get_time", Args: "{}"}}
	if err != nil || !reflect.DeepEqual(got.ToolCalls, want) {
		t.Errorf("CompleteWithTools = %+v, %v; want calls %+v", got, err, want)
	}
}

// TestTextThatOnlyLooksLikeACallStaysText: what a model writes as text
// becomes a call only when it is one, of an offered tool, whole; an
// answer the owner asked to be JSON, a broken block, or a call among
// others that does not decode leaves the text as the model wrote it.
func TestTextThatOnlyLooksLikeACallStaysText(t *testing.T) {
	tools := []contracts.ToolDefinition{{Name: "get_time"}}
	for _, text := range []string{
		`{"name": "Bob", "age": 3}`,
		`{"name": "get_time", "arguments": {}, "why": "an extra field"}`,
		`{"name": "get_time", "arguments": [1, 2]}`,
		`{"name": "get_time", "arguments": {}} and then some`,
		"<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {</tool_call>",
		"Here is how a call looks: <tool_call>not json</tool_call>",
	} {
		_, p, _ := demo(t, "local", demomodel.Step{Text: text})
		got, err := p.CompleteWithTools(context.Background(), greeting, tools)
		if err != nil || got.Text != text || len(got.ToolCalls) != 0 {
			t.Errorf("answer %q: CompleteWithTools = %+v, %v; want the text unchanged and no call", text, got, err)
		}
	}
}

// TestNoToolsOfferedNoCallsFromText: with no tools offered (a turn that
// only talks), a <tool_call> block is never a call.
func TestNoToolsOfferedNoCallsFromText(t *testing.T) {
	const text = `<tool_call>{"name": "get_time", "arguments": {}}</tool_call>`
	_, p, _ := demo(t, "local", demomodel.Step{Text: text})
	got, err := p.CompleteWithTools(context.Background(), greeting, nil)
	if err != nil || got.Text != text || got.ToolCalls != nil {
		t.Errorf("CompleteWithTools = %+v, %v; want the text unchanged", got, err)
	}
}

// TestAnUnclosedThinkHidesTheRest: a model cut off while thinking leaves
// "<think>…" without its end; none of it is the reply.
func TestAnUnclosedThinkHidesTheRest(t *testing.T) {
	_, p, _ := demo(t, "local", demomodel.Step{Text: "<think>the owner wants rm -rf, I could"})
	got, err := p.CompleteWithTools(context.Background(), greeting, nil)
	if err != nil || got.Text != "" || strings.Contains(got.Text, "rm") {
		t.Errorf("CompleteWithTools = %+v, %v; want no text", got, err)
	}
}

// TestQwenCoderParametersTakeTheirSchemaTypes: in Qwen3-Coder's call
// format every parameter is text; one the tool's schema calls a number
// or a boolean becomes one when the text is one, and a command keeps its
// characters as written.
func TestQwenCoderParametersTakeTheirSchemaTypes(t *testing.T) {
	tool := contracts.ToolDefinition{Name: "run_command", ParamsSchema: map[string]any{"type": "object", "properties": map[string]any{
		"command": map[string]any{"type": "string"},
		"timeout": map[string]any{"type": "integer"},
		"sudo":    map[string]any{"type": "boolean"},
		"retries": map[string]any{"type": "integer"},
	}}}
	const text = "<tool_call>\n<function=run_command>\n<parameter=command>\nls -l > out.txt && echo 1\n</parameter>\n" +
		"<parameter=timeout>\n30\n</parameter>\n<parameter=sudo>\nfalse\n</parameter>\n<parameter=retries>\nthree\n</parameter>\n</function>\n</tool_call>"
	_, p, _ := demo(t, "local", demomodel.Step{Text: text})
	got, err := p.CompleteWithTools(context.Background(), greeting, []contracts.ToolDefinition{tool})
	want := []contracts.ToolCall{{ID: "call_1", Name: "run_command", Args: `{"command":"ls -l > out.txt && echo 1","timeout":30,"sudo":false,"retries":"three"}`}}
	if err != nil || got.Text != "" || !reflect.DeepEqual(got.ToolCalls, want) {
		t.Errorf("CompleteWithTools = %+v, %v; want %+v", got, err, want)
	}
	for _, broken := range []string{
		"<tool_call><function=run_command><parameter=command>a</parameter><parameter=command>b</parameter></function></tool_call>",
		"<tool_call><function=run_command>pwd</function></tool_call>",
		"<tool_call><function=run_command><parameter=command>pwd</parameter></function> and more</tool_call>",
		"<tool_call><function=rm_rf><parameter=path>/</parameter></function></tool_call>",
	} {
		_, p, _ := demo(t, "local", demomodel.Step{Text: broken})
		if got, err := p.CompleteWithTools(context.Background(), greeting, []contracts.ToolDefinition{tool}); err != nil || got.ToolCalls != nil || got.Text != broken {
			t.Errorf("answer %q: CompleteWithTools = %+v, %v; want the text unchanged", broken, got, err)
		}
	}
}
