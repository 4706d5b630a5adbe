package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestJudgeToolImports(t *testing.T) {
	imports := []ToolImport{
		{File: "greet.py", Line: 1, Module: "json"},
		{File: "greet.py", Line: 2, Module: "openai"},
		{File: "greet.py", Line: 3, Module: "google.genai"},
		{File: "greet.py", Line: 4, Module: "googleapis"},
		{File: "test_greet.py", Line: 5, Module: "shelldon.policy"},
		{File: "greet.py", Line: 6, Computed: true},
	}
	forbidden, unverifiable := JudgeToolImports(imports)
	want := []string{"greet.py line 2: openai", "greet.py line 3: google.genai", "test_greet.py line 5: shelldon.policy"}
	if !slices.Equal(forbidden, want) {
		t.Errorf("JudgeToolImports forbidden = %q, want %q", forbidden, want)
	}
	if want := []string{"greet.py line 6: an import whose module is computed"}; !slices.Equal(unverifiable, want) {
		t.Errorf("JudgeToolImports unverifiable = %q, want %q", unverifiable, want)
	}
}

func TestBrokenTests(t *testing.T) {
	before := map[string]string{"test_a": "A", "test_b": "B", "TestC.test_d": "D"}
	cases := []struct {
		name  string
		after map[string]string
		want  []string
	}{
		{"unchanged, one added", map[string]string{"test_a": "A", "test_b": "B", "TestC.test_d": "D", "test_new": "N"}, nil},
		{"one changed, one removed", map[string]string{"test_a": "A2", "TestC.test_d": "D"}, []string{"test_a (changed)", "test_b (removed)"}},
		{"the file gone", nil, []string{"TestC.test_d (the file is gone or does not parse)", "test_a (the file is gone or does not parse)", "test_b (the file is gone or does not parse)"}},
	}
	for _, tc := range cases {
		if got := BrokenTests(before, tc.after); !slices.Equal(got, tc.want) {
			t.Errorf("%s: BrokenTests = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := BrokenTests(nil, nil); got != nil {
		t.Errorf("BrokenTests(nil, nil) = %q, want nothing: a file without tests holds none to break", got)
	}
}

func TestToolNameShadows(t *testing.T) {
	for _, stem := range []string{"json", "os", "ast", "pytest", "_pytest", "pluggy", "packaging", "sitecustomize", "usercustomize", "conftest", "cprofile", "CProfile", "test"} {
		if _, shadows := ToolNameShadows(stem); !shadows {
			t.Errorf("ToolNameShadows(%q) = false, want the module it shadows", stem)
		}
	}
	for _, stem := range []string{"greet", "weather_report", "json_tool", "tool_os", "openai"} {
		if module, shadows := ToolNameShadows(stem); shadows {
			t.Errorf("ToolNameShadows(%q) = %q, want none", stem, module)
		}
	}
	if !slices.IsSorted(pythonModules) {
		t.Error("pythonModules is not sorted: the binary search would miss names")
	}
	for _, m := range pythonModules {
		if m != strings.ToLower(m) {
			t.Errorf("pythonModules holds %q, want it lower case", m)
		}
	}
}
