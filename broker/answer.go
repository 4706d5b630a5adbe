package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"shelldon/contracts"
)

// The servers owners point shelldon at differ in what an answer holds;
// normalizeAnswer is where those differences end, so the worker sees one
// vocabulary: Text is what the model says (no reasoning), ToolCalls are
// the calls it asks for, each under an id of its own.

// Tags a Hermes- or Qwen-style model writes a tool call between when the
// server has no parser for it (llama-server without a tool-aware
// template, Ollama with a plain template, vLLM without --tool-call-parser).
const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// normalizeAnswer is one answer in the worker's vocabulary: its text
// without reasoning (the <think> blocks some models write into content;
// a separate reasoning_content field never becomes text), its tool calls
// — or, when it has none and tools were offered, the calls the model
// wrote into its text in a known plain-text format — each with an id no
// earlier call of the conversation has.
func normalizeAnswer(content string, calls []contracts.ToolCall, tools []contracts.ToolDefinition, messages []contracts.Message) (string, []contracts.ToolCall) {
	text := content
	if thought := contracts.WithoutThinking(content); thought != content {
		text = strings.TrimSpace(thought)
	}
	if len(calls) == 0 && len(tools) > 0 {
		if rest, written, ok := toolCallsInText(text, tools); ok {
			text, calls = rest, written
		}
	}
	return text, withUniqueIDs(calls, messages)
}

// toolCallsInText finds the tool calls a model wrote as text: one or more
// <tool_call>{"name": …, "arguments": {…}}</tool_call> blocks (Hermes,
// Qwen), or a whole answer that is one {"name": …, "parameters": {…}}
// object (Llama 3.1). Every call must name an offered tool; if one does
// not, or does not decode, none is taken and the text stays text, so the
// broker never makes up a call the model did not clearly ask for. rest is
// the text around the blocks.
func toolCallsInText(text string, tools []contracts.ToolDefinition) (rest string, calls []contracts.ToolCall, ok bool) {
	offered := make(map[string]contracts.ToolDefinition, len(tools))
	for _, t := range tools {
		offered[t.Name] = t
	}
	if !strings.Contains(text, toolCallOpen) {
		call, ok := textToolCall(text, offered)
		if !ok {
			return "", nil, false
		}
		return "", []contracts.ToolCall{call}, true
	}
	var around strings.Builder
	for s := text; ; {
		start := strings.Index(s, toolCallOpen)
		if start < 0 {
			around.WriteString(s)
			break
		}
		around.WriteString(s[:start])
		s = s[start+len(toolCallOpen):]
		inner := s
		if end := strings.Index(s, toolCallClose); end >= 0 {
			inner, s = s[:end], s[end+len(toolCallClose):]
		} else {
			s = "" // the model stopped before closing its last call
		}
		call, ok := textToolCall(inner, offered)
		if !ok {
			return "", nil, false
		}
		calls = append(calls, call)
	}
	return strings.TrimSpace(around.String()), calls, true
}

// textToolCall decodes one call written as text: JSON with a name among
// the offered tools and arguments (or parameters) that are a JSON object,
// or a string holding one; or Qwen3-Coder's <function=…> form
// ([xmlToolCall]); nothing else.
func textToolCall(s string, offered map[string]contracts.ToolDefinition) (contracts.ToolCall, bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, functionOpen) {
		return xmlToolCall(s, offered)
	}
	if !strings.HasPrefix(s, "{") {
		return contracts.ToolCall{}, false
	}
	var call struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if dec.Decode(&call) != nil || dec.More() {
		return contracts.ToolCall{}, false
	}
	if _, known := offered[call.Name]; !known {
		return contracts.ToolCall{}, false
	}
	args := call.Arguments
	if args == nil {
		args = call.Parameters
	}
	if len(args) > 0 && args[0] == '"' {
		var inner string
		if json.Unmarshal(args, &inner) != nil {
			return contracts.ToolCall{}, false
		}
		args = json.RawMessage(inner)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) != nil || !bytes.HasPrefix(compact.Bytes(), []byte("{")) {
		return contracts.ToolCall{}, false
	}
	return contracts.ToolCall{Name: call.Name, Args: compact.String()}, true
}

// The tags of Qwen3-Coder's call format.
const (
	functionOpen   = "<function="
	functionClose  = "</function>"
	parameterOpen  = "<parameter="
	parameterClose = "</parameter>"
)

// xmlToolCall decodes Qwen3-Coder's call format,
//
//	<function=run_command>
//	<parameter=command>
//	pwd
//	</parameter>
//	</function>
//
// into a call of an offered tool whose arguments are an object of the
// parameters, each a string unless the tool's schema types it as a
// number, an integer or a boolean and the text is one. Anything but
// parameter blocks inside the function, or a parameter named twice, and
// it is no call.
func xmlToolCall(s string, offered map[string]contracts.ToolDefinition) (contracts.ToolCall, bool) {
	name, body, ok := cutTag(s, functionOpen, functionClose)
	tool, known := offered[name]
	if !ok || !known {
		return contracts.ToolCall{}, false
	}
	args := map[string]json.RawMessage{}
	var order []string
	for body = strings.TrimSpace(body); body != ""; body = strings.TrimSpace(body) {
		param, value, ok := cutTag(body, parameterOpen, parameterClose)
		if !ok {
			return contracts.ToolCall{}, false
		}
		if _, twice := args[param]; twice || param == "" {
			return contracts.ToolCall{}, false
		}
		body = body[strings.Index(body, parameterClose)+len(parameterClose):]
		value = strings.TrimSuffix(strings.TrimPrefix(value, "\n"), "\n")
		args[param] = parameterValue(value, tool.ParamsSchema, param)
		order = append(order, param)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for i, param := range order {
		if i > 0 {
			out.WriteByte(',')
		}
		key, _ := json.Marshal(param)
		out.Write(key)
		out.WriteByte(':')
		out.Write(args[param])
	}
	out.WriteByte('}')
	return contracts.ToolCall{Name: name, Args: out.String()}, true
}

// cutTag splits "<open NAME>BODY</close>..." into NAME and BODY; ok is
// false unless s starts with open and holds close after the name.
func cutTag(s, open, close string) (name, body string, ok bool) {
	if !strings.HasPrefix(s, open) {
		return "", "", false
	}
	rest := s[len(open):]
	gt := strings.Index(rest, ">")
	if gt < 0 {
		return "", "", false
	}
	name, rest = strings.TrimSpace(rest[:gt]), rest[gt+1:]
	end := strings.Index(rest, close)
	if end < 0 {
		return "", "", false
	}
	if open == functionOpen && strings.TrimSpace(rest[end+len(close):]) != "" {
		return "", "", false // text after the function: not one call
	}
	return name, rest[:end], true
}

// parameterValue is value as JSON: the number or boolean it spells when
// the schema says the parameter is one, else a string.
func parameterValue(value string, schema map[string]any, param string) json.RawMessage {
	properties, _ := schema["properties"].(map[string]any)
	property, _ := properties[param].(map[string]any)
	switch property["type"] {
	case "integer", "number", "boolean":
		var v any
		if json.Unmarshal([]byte(strings.TrimSpace(value)), &v) == nil {
			switch v.(type) {
			case float64, bool:
				return json.RawMessage(strings.TrimSpace(value))
			}
		}
	}
	// Written as the model wrote it: no \u003c for a "<" in a command.
	var quoted bytes.Buffer
	enc := json.NewEncoder(&quoted)
	enc.SetEscapeHTML(false)
	enc.Encode(value) // a string always encodes
	return bytes.TrimSuffix(quoted.Bytes(), []byte("\n"))
}

// withUniqueIDs gives every call an id that no other call of the
// conversation has: servers send calls without ids (llama-server's
// documented answer, Gemini at times), or several under one. A missing or
// repeated id becomes "call_<n>", numbered after the calls already in the
// conversation, so the same answer to the same conversation always gets
// the same ids.
func withUniqueIDs(calls []contracts.ToolCall, messages []contracts.Message) []contracts.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	used := map[string]bool{}
	earlier := 0
	for _, m := range messages {
		for _, c := range m.ToolCalls {
			used[c.ID] = true
			earlier++
		}
	}
	for i := range calls {
		if calls[i].ID == "" || used[calls[i].ID] {
			n := earlier + i + 1
			for used[fmt.Sprintf("call_%d", n)] {
				n++
			}
			calls[i].ID = fmt.Sprintf("call_%d", n)
		}
		used[calls[i].ID] = true
	}
	return calls
}

// errorBodyMessage is the message of an error answer whose JSON is not
// OpenAI's {"error": {"message": …}}: {"error": "…"} (Ollama's native
// API), the error object at the top level (vLLM's ErrorResponse,
// Mistral), a list of error objects (Gemini's OpenAI-compatible
// endpoint), or FastAPI's {"detail": […]} (Mistral's validation); empty
// when it is none of them.
func errorBodyMessage(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return messageIn(v, 4)
}

// messageIn looks for a message in v, at most depth objects down.
func messageIn(v any, depth int) string {
	if depth == 0 {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			return messageIn(v[0], depth-1)
		}
	case map[string]any:
		for _, key := range []string{"error", "message"} {
			if inner, ok := v[key]; ok {
				return messageIn(inner, depth-1)
			}
		}
		if detail, ok := v["detail"]; ok {
			return detailMessage(detail)
		}
	}
	return ""
}

// detailMessage is FastAPI's validation detail as "body.field: problem",
// one per problem.
func detailMessage(detail any) string {
	items, ok := detail.([]any)
	if !ok {
		s, _ := detail.(string)
		return s
	}
	var parts []string
	for _, item := range items {
		problem, _ := item.(map[string]any)
		msg, _ := problem["msg"].(string)
		var loc []string
		if path, ok := problem["loc"].([]any); ok {
			for _, p := range path {
				loc = append(loc, fmt.Sprint(p))
			}
		}
		if len(loc) > 0 {
			msg = strings.Join(loc, ".") + ": " + msg
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// toolRefusals are the words each server refuses tools with, and what
// the owner can do about it.
var toolRefusals = []struct{ says, fix string }{
	{"does not support tools", "choose a model Ollama lists with tools, such as qwen2.5:7b"},                              // Ollama
	{"tools param requires --jinja", "start llama-server with --jinja"},                                                   // llama.cpp
	{"--enable-auto-tool-choice", "start vLLM with --enable-auto-tool-choice and the model's --tool-call-parser"},         // vLLM
	{"no endpoints found that support tool use", "choose a model whose OpenRouter page lists tools among its parameters"}, // OpenRouter
	{"tool calling is not supported", "choose a model that calls tools"},                                                  // Groq
	{"does not support function calling", "choose a model that calls tools, such as deepseek-chat"},                       // DeepSeek
	{"function calling is not enabled", "choose a Gemini model rather than Gemma"},                                        // Gemini
}

// toolsRefusal reports whether a provider's message refuses tools, and
// the fix for the owner.
func toolsRefusal(message string) (fix string, ok bool) {
	lower := strings.ToLower(message)
	for _, r := range toolRefusals {
		if strings.Contains(lower, r.says) {
			return r.fix + " (docs/configuration.md lists models that call tools)", true
		}
	}
	return "", false
}
