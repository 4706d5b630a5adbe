package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func evalArgs(expr string) string {
	b, _ := json.Marshal(map[string]string{"expression": expr})
	return string(b)
}

func TestPythonEval(t *testing.T) {
	env := testEnv(t)
	tests := []struct {
		expr, want, wantErr string
	}{
		{"1 + 2 * 3", "7", ""},
		{"7 // 2, 7 % 2, 1 / 4", "(3, 1, 0.25)", ""},
		{`"Hello".upper() + " " + "x,y".replace(",", "-")`, `"HELLO x-y"`, ""},
		{"[x * x for x in range(5) if x % 2 == 0]", "[0, 4, 16]", ""},
		{"sum([x*x for x in range(100)])", "328350", ""},
		{"math.sqrt(16)", "4.0", ""},
		{`", ".join(sorted({"b": 1, "a": 2}.keys()))`, `"a, b"`, ""},
		{`"%s-%d" % ("a", 3)`, `"a-3"`, ""},
		{`load("x")`, "", "not a Starlark expression"},
		{"2 ** 10", "", "not a Starlark expression"},
		{"1 +", "", "not a Starlark expression"},
		{"[x for x in range(1000000) for y in range(1000000)]", "", "too many steps"},
		{"[x for x in range(1000000000000)]", "", "too many steps"},
		{"list(range(1000000000000))", "", "more than the limit"},
		{"max(range(1000000000000))", "", "more than the limit"},
		{`"x" * 1000000000`, "", "more than the limit"},
		{`[0] * 1000000000`, "", "more than the limit"},
		{`("x" * 1000000) * 1000`, "", "more than the limit"},
		{`",".join([("x" * 1000000)] * 1000)`, "", "more than the limit"},
		{`("a" * 1000).replace("a", "a" * 1000).replace("a", "a" * 1000)`, "", "more than the limit"},
		{`[l.extend(l) for l in [[1]] for _ in range(40)]`, "", "more than the limit"},
		{`[l.append(l[-1] + l[-1]) for l in [["x"]] for _ in range(40)]`, "", "more than the limit"},
		{`[l.append(l[-1] * l[-1]) for l in [[3]] for _ in range(40)]`, "", "bits"},
		{`[("x" * 1000000) + str(i) for i in range(1000)]`, "", "more than 64 MB"},
		{`repr([("x" * 1000000)] * 100)`, "", "more than"},
		{`"{0}{0}{0}{0}".format("x" * 1000000)`, "", "more than the limit"},
		{`(lambda f: f(f))(lambda f: f(f))`, "", "called recursively"},
		{`undefined_name`, "", "undefined"},
		{`print("x")`, "", "print is not available"},
		{`fail("x" * 1000)`, "", "fail is not available"},
		{`1 // 0`, "", "division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := runLocal(t, env, "python_eval", evalArgs(tt.expr))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("python_eval(%q) = %.80q, %v; want error containing %q", tt.expr, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("python_eval(%q) = %q, %v; want %q", tt.expr, got, err, tt.want)
			}
		})
	}
}

func TestPythonEvalCancelled(t *testing.T) {
	env := testEnv(t)
	tool, _ := Builtins(env).Lookup("python_eval")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tool.(Local).Run(ctx, evalArgs("[x for x in range(100000)]"))
	if err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("python_eval with a cancelled context error = %v, want cancelled", err)
	}
	if _, err := tool.Check(evalArgs("1 +")); !errors.Is(err, ErrBadArgs) {
		t.Fatalf("Check(syntax error) = %v, want ErrBadArgs", err)
	}
}

func BenchmarkPythonEval(b *testing.B) {
	env := testEnv(&testing.T{})
	tool, _ := Builtins(env).Lookup("python_eval")
	local := tool.(Local)
	args := evalArgs("sum([x*x for x in range(100)])")
	for b.Loop() {
		if _, err := local.Run(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}
