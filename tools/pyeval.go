package tools

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"shelldon/contracts"
)

// What counts as too much for one python_eval call. The step limit and the
// guards (pyguard.go) stop the common cases with an error that says which
// limit was met; the evaluator process (pyproc.go) is killed at the others.
const (
	// maxEvalSteps bounds the Starlark steps of one call.
	maxEvalSteps = 1_000_000
	// evalTimeout bounds its wall-clock time: the evaluator is killed
	// then, whatever it is doing.
	evalTimeout = 2 * time.Second
	// evalStopAhead is how long before that the evaluation stops itself
	// between two steps, so that a merely slow expression ends with
	// Starlark's error and the kill is left for one stuck in a builtin.
	evalStopAhead = 200 * time.Millisecond
	// evalCPUSeconds is the evaluator's RLIMIT_CPU: the kernel kills it
	// there even with nobody left to (its worker gone and the parent-death
	// signal lost).
	evalCPUSeconds = 3
	// maxEvalOutput caps the repr returned to the model, and an error.
	maxEvalOutput = 16 << 10
	// maxExpressionBytes caps the source.
	maxExpressionBytes = 4 << 10
)

// evalMemory is what the evaluator may map beyond what it holds when it
// starts (RLIMIT_DATA): the Go runtime's own share depends on the build
// and the board, the expression's should not. A variable only so that the
// tests under the race detector, whose shadow memory doubles every
// mapping, can make room for it.
var evalMemory int64 = 128 << 20

var expressionParam = param{name: "expression", description: "One Starlark (Python-like) expression, e.g. \"sum([x*x for x in range(10)])\".", required: true, maxBytes: maxExpressionBytes}

type pythonEval struct{ env Env }

func (pythonEval) Definition() contracts.ToolDefinition {
	return definition("python_eval",
		"Evaluates ONE expression in Starlark, a small Python dialect, and returns the repr of its value. Works like Python: arithmetic (// and % on ints, floats), strings and their methods, lists, dicts, tuples, comprehensions, conditional expressions, lambda, and the builtins abs all any bool chr dict enumerate float int len list max min ord range repr reversed set sorted str sum tuple type zip, plus a math module (math.sqrt, math.pi, math.floor, math.log, math.pow...). Not available: statements, assignments, imports or load(), the ** operator (use math.pow or repeated *), while loops, recursion, classes, exceptions, f-strings, files and network. Ints are arbitrary precision up to 65536 bits. Limits: 1,000,000 steps, 2 seconds, 128 MB of memory, strings up to 1 MB, lists up to 262,144 items, 64 MB of values built in total, comparisons and sorts over at most 1,048,576 items (nested ones counted each time they appear).",
		expressionParam)
}

func (pythonEval) Check(args string) (Checked, error) {
	values, err := parseArgs(args, expressionParam)
	if err != nil {
		return Checked{}, err
	}
	if _, err := parseExpression(values["expression"]); err != nil {
		return Checked{}, err
	}
	return free("python_eval", "working something out in Python"), nil
}

// evalOptions allows nothing beyond the core language: no while, no
// recursion, no top-level control, no global reassignment.
var evalOptions = &syntax.FileOptions{Set: true}

// parseExpression parses src as one Starlark expression and routes its
// allocating operators through the guard.
func parseExpression(src string) (syntax.Expr, error) {
	expr, err := evalOptions.ParseExpr("expression", src, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: not a Starlark expression: %v", ErrBadArgs, err)
	}
	return guardExpr(expr), nil
}

func (t pythonEval) Run(ctx context.Context, args string) (string, error) {
	values, err := parseArgs(args, expressionParam)
	if err != nil {
		return "", err
	}
	if len(t.env.Evaluator) == 0 {
		return "", errors.New("python_eval: there is no evaluator to run the expression in")
	}
	answer, err := runEvaluator(ctx, t.env.Evaluator, values["expression"])
	if err != nil {
		return "", fmt.Errorf("python_eval: %w", err)
	}
	if answer.Error != "" {
		return "", fmt.Errorf("python_eval: %s", answer.Error)
	}
	return answer.Value, nil
}

// evaluate evaluates one expression in this process, with the step limit,
// the guards and a stop between steps shortly before the deadline: all of
// python_eval but the bounds of the process it runs in.
func evaluate(src string) (string, error) {
	expr, err := parseExpression(src)
	if err != nil {
		return "", err
	}
	thread := &starlark.Thread{
		Name:  "python_eval",
		Print: func(*starlark.Thread, string) {},
		Load: func(*starlark.Thread, string) (starlark.StringDict, error) {
			return nil, errors.New("load is not available")
		},
	}
	thread.SetMaxExecutionSteps(maxEvalSteps)
	thread.SetLocal(budgetKey, newAllocBudget())
	timer := time.AfterFunc(evalTimeout-evalStopAhead, func() { thread.Cancel("took longer than 2 seconds") })
	defer timer.Stop()
	defer watchMemory(thread)()

	value, err := starlark.EvalExprOptions(evalOptions, thread, expr, predeclared())
	if err != nil {
		var evalErr *starlark.EvalError
		if errors.As(err, &evalErr) {
			return "", errors.New(evalErr.Msg)
		}
		return "", err
	}
	return boundedRepr(value, maxEvalOutput)
}

// unavailable is a builtin that python_eval leaves out.
func unavailable(_ *starlark.Thread, b *starlark.Builtin, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return nil, fmt.Errorf("%s is not available: the value of the expression is the answer", b.Name())
}

// predeclared is the environment of every evaluation: Starlark's universe
// with its builtins guarded, sum, and the math module. It is made at the
// first evaluation, which only the evaluator process runs, not at the
// start of every worker and core.
var predeclared = sync.OnceValue(func() starlark.StringDict {
	env := starlark.StringDict{"math": math.Module}
	for name, value := range starlark.Universe {
		if name == "print" || name == "fail" {
			// Output goes nowhere, and fail's message would be an
			// unbounded string; a failing expression needs neither.
			// Left out, the resolver would find Starlark's own.
			env[name] = starlark.NewBuiltin(name, unavailable)
			continue
		}
		env[name] = guardValue(value)
	}
	env["sum"] = starlark.NewBuiltin("sum", sum)
	env["getattr"] = starlark.NewBuiltin("getattr", getattr)
	for name, fn := range guardBuiltins() {
		env[name] = starlark.NewBuiltin(name, fn)
	}
	env.Freeze()
	return env
})
