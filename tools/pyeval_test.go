package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
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

// evalLimit is how long a python_eval call may take with the evaluator's
// start and the kill: its 2 s and some.
const evalLimit = 3 * time.Second

// limitCase is one expression that must end with a clear error within
// evalLimit.
type limitCase struct {
	expr, wantErr string
	// slow marks an expression whose work, though bounded, takes a good
	// part of the 2 s on a busy machine: meeting the time limit first is
	// as clear an error, within the same limit.
	slow bool
}

// endsWithin checks that python_eval(tc.expr) fails within evalLimit with
// an error that says tc.wantErr. A call that does not end is given up on,
// so it fails the test rather than hanging it.
func endsWithin(t *testing.T, env Env, tc limitCase) {
	t.Helper()
	type answer struct {
		got string
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		got, err := runLocal(t, env, "python_eval", evalArgs(tc.expr))
		done <- answer{got, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(evalLimit + 2*time.Second):
		a.got = "(nothing yet)"
	}
	clear := a.err != nil && (strings.Contains(a.err.Error(), tc.wantErr) ||
		// The race detector slows builtins several times over, so the
		// time limit may come before the limit the call is meant to meet.
		(tc.slow || raceDetector) && (strings.Contains(a.err.Error(), "stopped after 2 s") || strings.Contains(a.err.Error(), "took longer than 2 seconds")))
	if took := time.Since(start); took > evalLimit || !clear {
		t.Errorf("python_eval(%q) took %v / answered %.80q, %v, want a clear error within the limit (%q)", tc.expr, took.Round(time.Millisecond), a.got, a.err, tc.wantErr)
	}
}

// The step counter sees no work done inside a builtin, so each of these
// once ran far past the 2 s budget or the memory it is allowed. The
// guards stop them before the evaluator's bounds have to.
func TestPythonEvalAttacksEndWithinTheLimits(t *testing.T) {
	env := testEnv(t)
	tests := []limitCase{
		// 150 reversed copies of a megabyte: 240 MiB.
		{`(lambda s: len([s[::-1] for i in range(150)]))("x"*1048576)`, "more than 64 MB", true},
		// A thousand references to one long list, sorted: 16.4 s.
		{`sorted([[0]*262144]*1000)[0][0]`, "sorted: the values hold more than 1048576 items", false},
		// A megabyte of digits: 9.4 s on a board.
		{`int("9"*1048576)`, "int: 1048576 digits are more than", false},
		// A list of lists of lists ... compared with its copy: no end.
		{`(lambda l: l == l[:])([[[[[[[[0]*64]*64]*64]*64]*64]*64]*64]*64)`, "operator ==: the values hold more than 1048576 items", false},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) { endsWithin(t, env, tt) })
	}
}

// Others that Starlark counts as a step or a few but that build or walk a
// lot: stopped by the guards, by the step limit, or by the evaluator's
// bounds (the ones the guards let through on purpose).
func TestPythonEvalEndsWithinTheLimits(t *testing.T) {
	env := testEnv(t)
	tests := []limitCase{
		{`[int("9"*1048576) for i in range(3)]`, "digits are more than", false},
		{`int("9"*19730)`, "digits are more than", false},
		{`"x" * (1<<30)`, "more than the limit", false},
		{`"%s%s%s%s" % (("x" * 1048576,) * 4)`, "more than the limit", false},
		{`"{}{}".format("x" * 1048576, "y")`, "more than the limit", false},
		{`"-".join(["x" * 1048576] * 2)`, "more than the limit", false},
		{`{i: i for i in range(100000000)}`, "too many steps", true},
		{`(lambda s: [s.add(i) for i in range(100000000)])(set())`, "too many steps", true},
		{`set(range(1 << 40))`, "more than the limit", false},
		{`dict(enumerate(range(1 << 40)))`, "more than the limit", false},
		{`sorted(range(1 << 40))`, "more than the limit", false},
		{`tuple(range(1 << 40))`, "more than the limit", false},
		{`str([[0] * 262144] * 262144)`, "more than 1048576 bytes", false},
		{`repr({i: "x" * 100000 for i in range(20)})`, "more than 1048576 bytes", false},
		{`(lambda l: l.index(1))([[0] * 262144] * 100)`, "more than 1048576 items", false},
		{`(lambda l: l[0] in l)([[0] * 262144] * 10)`, "more than 1048576 items", false},
		{`(lambda l: l < l[:])([[[[0] * 64] * 64] * 64] * 64)`, "more than 1048576 items", false},
		{`sorted(range(100), key=lambda i: [[0] * 262144] * 10)`, "the keys: the values hold more than", false},
		{`max([[0] * 262144] * 10)`, "more than 1048576 items", false},
		{`(lambda d: d.get(tuple([tuple([0] * 1024)] * 1024)))({})`, "more than 1048576 items", false},
		{`(lambda f: f(f, 0))(lambda f, n: f(f, n + 1))`, "called recursively", false},
		{`json.encode([1])`, "undefined: json", false},
		// Each builtin call is short; the evaluation stops itself
		// between two of them.
		{`(lambda l: [max(l) for i in range(100000)])(list(range(262144)))`, "took longer than 2 seconds", true},
		// A dict key is hashed in one step with no guard: a tuple of a
		// thousand references to a tuple of ... is 10^12 items to hash.
		{`(lambda t: {t: 1})((lambda a: tuple([a] * 1000))((lambda b: tuple([b] * 1000))((lambda c: tuple([c] * 1000))(tuple([0] * 1000)))))`, "stopped after 2 s", false},
		// zip's pairs are charged 16 bytes each but hold about 70.
		{`(lambda l: len([zip(l, l) for i in range(14)]))(list(range(262144)))`, "ran out of memory (", true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) { endsWithin(t, env, tt) })
	}
}

// Starlark has no I/O: no builtin opens a file, starts a process or
// reaches the network, which is what lets the evaluator run with no
// descriptor to spare.
func TestPythonEvalHasNoIO(t *testing.T) {
	env := testEnv(t)
	for _, name := range []string{"open", "exec", "eval", "compile", "input", "load", "__import__", "os", "sys", "subprocess", "socket", "json", "time"} {
		got, err := runLocal(t, env, "python_eval", evalArgs(name))
		if err == nil || !strings.Contains(err.Error(), "undefined: "+name) && !strings.Contains(err.Error(), "not a Starlark expression") {
			t.Errorf("python_eval(%q) = %q, %v; want it undefined", name, got, err)
		}
	}
}
