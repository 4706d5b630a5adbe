package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"shelldon/contracts"
)

const (
	// maxEvalSteps bounds the Starlark steps of one python_eval call.
	maxEvalSteps = 1_000_000
	// evalTimeout bounds its wall-clock time.
	evalTimeout = 2 * time.Second
	// maxEvalOutput caps the repr returned to the model.
	maxEvalOutput = 16 << 10
	// maxExpressionBytes caps the source.
	maxExpressionBytes = 4 << 10
)

var expressionParam = param{name: "expression", description: "One Starlark (Python-like) expression, e.g. \"sum([x*x for x in range(10)])\".", required: true, maxBytes: maxExpressionBytes}

type pythonEval struct{ env Env }

func (pythonEval) Definition() contracts.ToolDefinition {
	return definition("python_eval",
		"Evaluates ONE expression in Starlark, a small Python dialect, and returns the repr of its value. Works like Python: arithmetic (// and % on ints, floats), strings and their methods, lists, dicts, tuples, comprehensions, conditional expressions, lambda, and the builtins abs all any bool chr dict enumerate float int len list max min ord range repr reversed set sorted str sum tuple type zip, plus a math module (math.sqrt, math.pi, math.floor, math.log, math.pow...). Not available: statements, assignments, imports or load(), the ** operator (use math.pow or repeated *), while loops, recursion, classes, exceptions, f-strings, files and network. Ints are arbitrary precision up to 65536 bits. Limits: 1,000,000 steps, about 2 seconds, strings up to 1 MB, lists up to 262,144 items, 64 MB of values built in total, comparisons and sorts over at most 1,048,576 items (nested ones counted each time they appear).",
		contracts.TierFree, expressionParam)
}

func (pythonEval) Check(args string) (Checked, error) {
	values, err := parseArgs(args, expressionParam)
	if err != nil {
		return Checked{}, err
	}
	if _, err := parseExpression(values["expression"]); err != nil {
		return Checked{}, err
	}
	return free, nil
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
	expr, err := parseExpression(values["expression"])
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
	budget := newAllocBudget()
	thread.SetLocal(budgetKey, budget)
	timer := t.env.Clock.AfterFunc(evalTimeout, func() { thread.Cancel("took longer than 2 seconds") })
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() { thread.Cancel("the turn was cancelled") })
	defer stop()

	value, err := starlark.EvalExprOptions(evalOptions, thread, expr, predeclared)
	if err != nil {
		var evalErr *starlark.EvalError
		if errors.As(err, &evalErr) {
			return "", fmt.Errorf("python_eval: %s", evalErr.Msg)
		}
		return "", fmt.Errorf("python_eval: %w", err)
	}
	out, err := boundedRepr(value, maxEvalOutput)
	if err != nil {
		return "", fmt.Errorf("python_eval: %w", err)
	}
	return out, nil
}

// unavailable is a builtin that python_eval leaves out.
func unavailable(_ *starlark.Thread, b *starlark.Builtin, _ starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return nil, fmt.Errorf("%s is not available: the value of the expression is the answer", b.Name())
}

// predeclared is the environment of every evaluation: Starlark's universe
// with its builtins guarded, sum, and the math module.
var predeclared = func() starlark.StringDict {
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
	for name, fn := range guardBuiltins {
		env[name] = starlark.NewBuiltin(name, fn)
	}
	env.Freeze()
	return env
}()
