package demomodel

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"shelldon/contracts"
)

func TestStepJSONRoundTrip(t *testing.T) {
	steps := []Step{
		{},
		{Text: "hi", Delay: 2 * time.Second},
		{ToolCalls: []contracts.ToolCall{{ID: "c", Name: "get_time", Args: "{}"}}, Delay: 1500 * time.Millisecond},
		{Status: 503, Error: "busy", Hang: true},
		{Raw: "{oops"},
	}
	for _, step := range steps {
		data, err := json.Marshal(step)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", step, err)
		}
		var back Step
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if !reflect.DeepEqual(back, step) {
			t.Errorf("round trip of %+v via %s = %+v", step, data, back)
		}
	}
	data, _ := json.Marshal(Step{Delay: 2 * time.Second})
	if string(data) != `{"delay":"2s"}` {
		t.Errorf("Marshal(delay 2s) = %s, want {\"delay\":\"2s\"}", data)
	}
}

func TestStepUnmarshal(t *testing.T) {
	tests := []struct {
		in      string
		want    Step
		wantErr string
	}{
		{`{"text":"a","delay":"250ms"}`, Step{Text: "a", Delay: 250 * time.Millisecond}, ""},
		{`{"text":"a","delay":"1s","chunk_delay":"60ms"}`, Step{Text: "a", Delay: time.Second, ChunkDelay: 60 * time.Millisecond}, ""},
		{`{"chunk_delay":"-5ms"}`, Step{}, "negative chunk_delay"},
		{`{"chunk_delay":"slow"}`, Step{}, `chunk_delay "slow"`},
		{`{"status":429,"error":"slow"}`, Step{Status: 429, Error: "slow"}, ""},
		{`{"tool_calls":[{"id":"x","name":"n","args":"{\"a\":1}"}]}`, Step{ToolCalls: []contracts.ToolCall{{ID: "x", Name: "n", Args: `{"a":1}`}}}, ""},
		{`{"delay":2}`, Step{}, "cannot unmarshal number"},
		{`{"delay":"soon"}`, Step{}, `delay "soon"`},
		{`{"delay":"-1s"}`, Step{}, "negative delay"},
		{`{"delay_ms":5}`, Step{}, `unknown field "delay_ms"`},
		{`{"status":42}`, Step{}, "status 42"},
		{`{"status":1000}`, Step{}, "status 1000"},
		{`"text"`, Step{}, "cannot unmarshal string"},
	}
	for _, tt := range tests {
		var got Step
		err := json.Unmarshal([]byte(tt.in), &got)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("Unmarshal(%s) error %v, want none", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Unmarshal(%s) error %v, want one containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && !reflect.DeepEqual(got, tt.want):
			t.Errorf("Unmarshal(%s) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestValidateWrapsErrInvalidStep(t *testing.T) {
	for _, step := range []Step{{Delay: -time.Second}, {Status: 99}, {Status: 600}} {
		if err := step.Validate(); !errors.Is(err, ErrInvalidStep) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidStep", step, err)
		}
	}
	for _, step := range []Step{{}, {Status: 200}, {Status: 599, Delay: time.Second}} {
		if err := step.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", step, err)
		}
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.json", `[{"text":"first"},{"status":500,"delay":"1s"},{"raw":"{"}]`)
	steps, err := LoadScript(good)
	want := []Step{{Text: "first"}, {Status: 500, Delay: time.Second}, {Raw: "{"}}
	if err != nil || !reflect.DeepEqual(steps, want) {
		t.Errorf("LoadScript(good) = %+v, %v, want %+v", steps, err, want)
	}

	tests := []struct {
		name, content string
		want          []string
	}{
		{"bad-entry.json", `[{"text":"ok"},{"text":"x","delay":"forever"}]`, []string{"bad-entry.json", "step 1", "forever"}},
		{"typo.json", `[{"txt":"hi"}]`, []string{"typo.json", "step 0", `unknown field "txt"`}},
		{"object.json", `{"text":"hi"}`, []string{"object.json", "JSON array"}},
		{"broken.json", `[{"text":`, []string{"broken.json", "JSON array"}},
		{"long.json", `[{"text":"` + strings.Repeat("é", 100) + `","status":7}]`, []string{"long.json", "step 0", "…", "status 7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadScript(write(tt.name, tt.content))
			if err == nil {
				t.Fatalf("LoadScript(%s) = nil error, want one", tt.content)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("LoadScript(%s) error %q, want it to mention %q", tt.content, err, w)
				}
			}
		})
	}
	if _, err := LoadScript(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("LoadScript(missing) error %v, want one naming the file", err)
	}
}
