package tools

// Starlark bounds computation by steps but not memory: "x" * 1000000000
// is one step that builds a gigabyte, and sorted(l) one step that may
// compare for minutes. The guard closes the common cases in four ways, so
// that they end at once with an error that says which limit they met,
// rather than in the evaluator's kill (pyproc.go), which bounds the rest.
//
//  1. guardExpr rewrites the parsed expression so that the operators that
//     can build a large value (+, *, %, <<) or walk one (==, <, in ...),
//     every slice and every attribute access (x.join, x.replace,
//     l.extend ...) call guard builtins instead.
//  2. The guard builtins and the wrapped universe builtins refuse, before
//     building it, a value over the caps (a string over maxStringBytes, a
//     sequence over maxElements items, an int over maxIntBits) whenever the
//     size is known in advance (repetition, concatenation, join, replace,
//     formatting, repr, iterating a huge range), and check the result
//     otherwise, when it is at most a small multiple of an input that was
//     itself within the caps.
//  3. Every result is charged to a per-call budget (maxAllocBytes), so a
//     comprehension cannot pile up many values that are each within the caps.
//  4. What compares or hashes a whole value in one step (the comparison
//     operators, in, sorted, min, max, set, dict, list.index, the dict and
//     set methods) first counts the items it would walk, nested ones each
//     time they appear, and refuses more than maxWalked; int() refuses a
//     string of more digits than an int within maxIntBits has, since
//     converting them costs more than linear time.
//
// What stays uncharged is what the step limit bounds: the items a
// comprehension appends (one step each) and literals written in the source.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

const (
	maxStringBytes = 1 << 20
	maxElements    = 1 << 18
	maxIntBits     = 1 << 16
	maxAllocBytes  = 64 << 20
	// maxWalked bounds the items one comparison, hash or sort may walk:
	// [[0] * 262144] * 1000 is a thousand references to one list, small
	// to hold but a quarter of a billion items to compare.
	maxWalked = 1 << 20
	// maxWalkDepth bounds the nesting such a walk follows; nothing
	// sensible is nested deeper, and the count stays a plain recursion.
	maxWalkDepth = 64
	// slotBytes is the cost charged per item of a list, tuple, dict or set.
	slotBytes = 16
)

// budgetKey is the thread-local key of the evaluation's allocBudget.
const budgetKey = "shelldon.allocBudget"

type allocBudget struct{ used int }

func newAllocBudget() *allocBudget { return &allocBudget{} }

// charge checks v against the caps and adds its size to the budget.
func charge(thread *starlark.Thread, v starlark.Value) (starlark.Value, error) {
	if err := checkCaps(v); err != nil {
		return nil, err
	}
	budget, _ := thread.Local(budgetKey).(*allocBudget)
	if budget == nil {
		return v, nil
	}
	budget.used += sizeOf(v)
	if budget.used > maxAllocBytes {
		return nil, fmt.Errorf("the expression built more than %d MB of values", maxAllocBytes>>20)
	}
	return v, nil
}

func sizeOf(v starlark.Value) int {
	switch v := v.(type) {
	case starlark.String:
		return len(v)
	case starlark.Bytes:
		return len(v)
	case starlark.Int:
		return v.BigInt().BitLen() / 8
	}
	if n := starlark.Len(v); n > 0 {
		return n * slotBytes
	}
	return 0
}

func checkCaps(v starlark.Value) error {
	switch v := v.(type) {
	case starlark.String:
		return checkStringLen(len(v))
	case starlark.Bytes:
		return checkStringLen(len(v))
	case starlark.Int:
		if bits := v.BigInt().BitLen(); bits > maxIntBits {
			return fmt.Errorf("an int of %d bits is more than the limit of %d", bits, maxIntBits)
		}
		return nil
	case starlark.Indexable, *starlark.Dict, *starlark.Set:
		return checkElements(starlark.Len(v))
	}
	return nil
}

func checkStringLen(n int) error {
	if n > maxStringBytes {
		return fmt.Errorf("a string of %d bytes is more than the limit of %d", n, maxStringBytes)
	}
	return nil
}

func checkElements(n int) error {
	if n > maxElements {
		return fmt.Errorf("%d items are more than the limit of %d", n, maxElements)
	}
	return nil
}

// guardExpr returns e with every +, *, % and << and every attribute access
// replaced by a call to the guard builtin of the same meaning.
func guardExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.BinaryExpr:
		e.X, e.Y = guardExpr(e.X), guardExpr(e.Y)
		if name, ok := guardedOps[e.Op]; ok {
			_, end := e.Span()
			return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: e.OpPos, Name: name}, Lparen: e.OpPos, Args: []syntax.Expr{e.X, e.Y}, Rparen: end}
		}
	case *syntax.DotExpr:
		e.X = guardExpr(e.X)
		_, end := e.Span()
		name := &syntax.Literal{Token: syntax.STRING, TokenPos: e.NamePos, Raw: fmt.Sprintf("%q", e.Name.Name), Value: e.Name.Name}
		return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: e.Dot, Name: "_attr"}, Lparen: e.Dot, Args: []syntax.Expr{e.X, name}, Rparen: end}
	case *syntax.UnaryExpr:
		if e.X != nil {
			e.X = guardExpr(e.X)
		}
	case *syntax.ParenExpr:
		e.X = guardExpr(e.X)
	case *syntax.CallExpr:
		e.Fn = guardExpr(e.Fn)
		guardList(e.Args)
	case *syntax.IndexExpr:
		e.X, e.Y = guardExpr(e.X), guardExpr(e.Y)
	case *syntax.SliceExpr:
		e.X = guardExpr(e.X)
		for _, p := range []*syntax.Expr{&e.Lo, &e.Hi, &e.Step} {
			if *p != nil {
				*p = guardExpr(*p)
			}
		}
		// A slice is a copy (s[::-1] of a megabyte is another one), so
		// it is charged like any other result.
		return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: e.Lbrack, Name: "_charged"}, Lparen: e.Lbrack, Args: []syntax.Expr{e}, Rparen: e.Rbrack}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = guardExpr(e.Cond), guardExpr(e.True), guardExpr(e.False)
	case *syntax.ListExpr:
		guardList(e.List)
	case *syntax.TupleExpr:
		guardList(e.List)
	case *syntax.DictExpr:
		guardList(e.List)
	case *syntax.DictEntry:
		e.Key, e.Value = guardExpr(e.Key), guardExpr(e.Value)
	case *syntax.LambdaExpr:
		guardList(e.Params)
		e.Body = guardExpr(e.Body)
	case *syntax.Comprehension:
		e.Body = guardExpr(e.Body)
		for _, clause := range e.Clauses {
			switch c := clause.(type) {
			case *syntax.ForClause:
				c.X = guardExpr(c.X)
			case *syntax.IfClause:
				c.Cond = guardExpr(c.Cond)
			}
		}
	}
	return e
}

func guardList(list []syntax.Expr) {
	for i := range list {
		list[i] = guardExpr(list[i])
	}
}

var guardedOps = map[syntax.Token]string{
	syntax.PLUS:    "_add",
	syntax.STAR:    "_mul",
	syntax.PERCENT: "_mod",
	syntax.LTLT:    "_lsh",
	syntax.EQL:     "_eq",
	syntax.NEQ:     "_ne",
	syntax.LT:      "_lt",
	syntax.LE:      "_le",
	syntax.GT:      "_gt",
	syntax.GE:      "_ge",
	syntax.IN:      "_in",
	syntax.NOT_IN:  "_not_in",
}

type builtinFunc = func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error)

// guardBuiltins are the targets of guardExpr's rewriting.
func guardBuiltins() map[string]builtinFunc {
	return map[string]builtinFunc{
		"_add":     binaryGuard(syntax.PLUS),
		"_mul":     binaryGuard(syntax.STAR),
		"_mod":     binaryGuard(syntax.PERCENT),
		"_lsh":     binaryGuard(syntax.LTLT),
		"_eq":      compareGuard(syntax.EQL),
		"_ne":      compareGuard(syntax.NEQ),
		"_lt":      compareGuard(syntax.LT),
		"_le":      compareGuard(syntax.LE),
		"_gt":      compareGuard(syntax.GT),
		"_ge":      compareGuard(syntax.GE),
		"_in":      compareGuard(syntax.IN),
		"_not_in":  compareGuard(syntax.NOT_IN),
		"_charged": charged,
		"_attr":    getattr,
	}
}

// charged is the identity, charging its argument: the target of every slice.
func charged(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("a slice is one value, got %d", len(args))
	}
	return charge(thread, args[0])
}

// compareGuard is a comparison or membership operator that first counts
// what it would walk.
func compareGuard(op syntax.Token) builtinFunc {
	return func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if len(args) != 2 {
			return nil, fmt.Errorf("operator %s needs two operands", op)
		}
		x, y := args[0], args[1]
		if err := checkWalk(compared(op, x, y)...); err != nil {
			return nil, fmt.Errorf("operator %s: %w", op, err)
		}
		if op == syntax.IN || op == syntax.NOT_IN {
			return starlark.Binary(op, x, y)
		}
		ok, err := starlark.Compare(op, x, y)
		return starlark.Bool(ok), err
	}
}

// compared are the operands that x op y walks item by item. Values of
// different types, and of different lengths under == and !=, are told
// apart at once; in hashes x to look it up in a dict or set, compares it
// with every item of a list or tuple, and is at most a substring search
// or an arithmetic test otherwise.
func compared(op syntax.Token, x, y starlark.Value) []starlark.Value {
	switch op {
	case syntax.IN, syntax.NOT_IN:
		switch y.(type) {
		case *starlark.Dict, *starlark.Set:
			return []starlark.Value{x}
		case *starlark.List, starlark.Tuple:
			return []starlark.Value{x, y}
		}
		return nil
	case syntax.EQL, syntax.NEQ:
		if starlark.Len(x) != starlark.Len(y) {
			return nil
		}
	}
	if x.Type() != y.Type() {
		return nil
	}
	return []starlark.Value{x, y}
}

// checkWalk refuses values that hold more than maxWalked items to walk.
func checkWalk(vs ...starlark.Value) error {
	if walkLen(maxWalked, vs...) > maxWalked {
		return errTooMuchToWalk
	}
	return nil
}

var errTooMuchToWalk = fmt.Errorf("the values hold more than %d items to compare or hash (a list inside another counts each time it appears), or are nested more than %d deep", maxWalked, maxWalkDepth)

// walkLen counts the items a comparison or hash of vs may visit: every
// item of every list, tuple, dict and set among them, a nested one each
// time it appears, stopping once past limit. A value nested deeper than
// maxWalkDepth counts as past the limit, as does one that holds itself.
func walkLen(limit int, vs ...starlark.Value) int {
	w := walker{limit: limit}
	for _, v := range vs {
		w.walk(v, 0)
	}
	return w.n
}

type walker struct{ n, limit int }

func (w *walker) walk(v starlark.Value, depth int) {
	w.n++
	if depth > maxWalkDepth {
		w.n = w.limit + 1
	}
	if w.n > w.limit {
		return
	}
	switch v := v.(type) {
	case *starlark.Dict:
		for key, value := range v.Entries() {
			if w.walk(key, depth+1); w.n > w.limit {
				return
			}
			if w.walk(value, depth+1); w.n > w.limit {
				return
			}
		}
	case *starlark.List, starlark.Tuple, *starlark.Set:
		for item := range starlark.Elements(v.(starlark.Iterable)) {
			if w.walk(item, depth+1); w.n > w.limit {
				return
			}
		}
	}
}

func binaryGuard(op syntax.Token) builtinFunc {
	return func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		if len(args) != 2 {
			return nil, fmt.Errorf("operator %s needs two operands", op)
		}
		return guardedBinary(thread, op, args[0], args[1])
	}
}

func guardedBinary(thread *starlark.Thread, op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	if err := precheckBinary(op, x, y); err != nil {
		return nil, err
	}
	v, err := starlark.Binary(op, x, y)
	if err != nil {
		return nil, err
	}
	return charge(thread, v)
}

// precheckBinary refuses a +, * or % whose result would be over the caps,
// before it is built.
func precheckBinary(op syntax.Token, x, y starlark.Value) error {
	switch op {
	case syntax.PLUS:
		return checkLength(x, starlark.Len(x)+starlark.Len(y))
	case syntax.STAR:
		if n, ok := y.(starlark.Int); ok && isSequence(x) {
			return checkRepeat(x, n)
		}
		if n, ok := x.(starlark.Int); ok && isSequence(y) {
			return checkRepeat(y, n)
		}
	case syntax.PERCENT:
		if format, ok := x.(starlark.String); ok {
			return checkStringLen(len(format) + strings.Count(string(format), "%")*largestRepr(y))
		}
	}
	return nil
}

func checkRepeat(seq starlark.Value, n starlark.Int) error {
	// No result may be longer than the largest cap (a string's), so a
	// count past it is refused before any multiplication can overflow,
	// on 32-bit boards too.
	const largest = int64(max(maxStringBytes, maxElements))
	count, ok := n.Int64()
	length := starlark.Len(seq)
	if !ok || count > largest || (length > 0 && count > largest/int64(length)) {
		return checkLength(seq, int(largest)+1)
	}
	if count <= 0 {
		return nil
	}
	return checkLength(seq, length*int(count))
}

func isSequence(v starlark.Value) bool {
	switch v.(type) {
	case starlark.String, starlark.Bytes, starlark.Indexable:
		return true
	}
	return false
}

// checkLength checks that a value of the same kind as v with n items would
// be within the caps.
func checkLength(v starlark.Value, n int) error {
	switch v.(type) {
	case starlark.String, starlark.Bytes:
		return checkStringLen(n)
	case starlark.Indexable:
		return checkElements(n)
	}
	return nil
}

// largestRepr is the longest repr among v, or among its items when v is a
// tuple or dict (the operands of % and format), capped just over the limit.
func largestRepr(v starlark.Value) int {
	largest := reprLen(v, maxStringBytes+1)
	var items []starlark.Value
	switch v := v.(type) {
	case starlark.Tuple:
		items = v
	case *starlark.Dict:
		for _, kv := range v.Items() {
			items = append(items, kv[1])
		}
	}
	for _, item := range items {
		largest = max(largest, reprLen(item, maxStringBytes+1))
	}
	return largest
}

// reprLen estimates, from above, the length of v's repr, stopping once it
// passes limit (which also ends the walk of a list that holds itself).
func reprLen(v starlark.Value, limit int) int {
	switch v := v.(type) {
	case starlark.String:
		return 2 + 4*len(v)
	case starlark.Bytes:
		return 3 + 4*len(v)
	case starlark.Int:
		return 2 + v.BigInt().BitLen()/3
	case starlark.Float, starlark.Bool, starlark.NoneType:
		return 32
	case starlark.Iterable:
		total := 8
		iter := v.Iterate()
		defer iter.Done()
		var item starlark.Value
		for total <= limit && iter.Next(&item) {
			total += 2 + reprLen(item, limit-total)
			if d, ok := v.(*starlark.Dict); ok {
				value, _, _ := d.Get(item)
				total += 2 + reprLen(value, limit-total)
			}
		}
		return total
	}
	return len(v.String())
}

// boundedRepr returns v's repr, refusing a value too large to show and
// cutting the text at limit bytes.
func boundedRepr(v starlark.Value, limit int) (string, error) {
	if n := reprLen(v, maxStringBytes+1); n > maxStringBytes {
		return "", fmt.Errorf("the result is too large to show (over %d bytes)", maxStringBytes)
	}
	s := v.String()
	if len(s) > limit {
		return fmt.Sprintf("%s\n[cut: showed %d of %d bytes]", s[:limit], limit, len(s)), nil
	}
	return s, nil
}

// getattr is the guarded getattr(x, name[, default]) and the target of
// every x.name: a method it returns is guarded too.
func getattr(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var object, fallback starlark.Value
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &object, &name, &fallback); err != nil {
		return nil, err
	}
	var value starlark.Value
	if holder, ok := object.(starlark.HasAttrs); ok {
		var err error
		if value, err = holder.Attr(name); err != nil {
			return nil, err
		}
	}
	if value == nil {
		if fallback != nil {
			return fallback, nil
		}
		return nil, fmt.Errorf("%s has no .%s field or method", object.Type(), name)
	}
	method, ok := value.(*starlark.Builtin)
	if !ok {
		return value, nil
	}
	return starlark.NewBuiltin(method.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := precheckMethod(object, name, args, kwargs); err != nil {
			return nil, err
		}
		before := starlark.Len(object)
		result, err := starlark.Call(thread, method, args, kwargs)
		if err != nil {
			return nil, err
		}
		// A method may grow its receiver (l.extend(l) doubles it).
		if after := starlark.Len(object); after > before {
			if err := checkCaps(object); err != nil {
				return nil, err
			}
			if _, err := charge(thread, starlark.Tuple(make([]starlark.Value, after-before))); err != nil {
				return nil, err
			}
		}
		return charge(thread, result)
	}), nil
}

// precheckMethod refuses a string method call whose result would be over
// the caps (the methods whose output can be far larger than their inputs),
// and a list, dict or set method call that would walk too much.
func precheckMethod(receiver starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) error {
	switch receiver.(type) {
	case *starlark.List:
		if name == "index" || name == "remove" {
			// Each compares its argument with the list's items.
			return checkWalk(append(slices.Clone(args), receiver)...)
		}
		return nil
	case *starlark.Dict, *starlark.Set:
		// Their methods hash their arguments (d.get(k), s.union(l)).
		walked := slices.Clone(args)
		for _, kv := range kwargs {
			walked = append(walked, kv[1])
		}
		return checkWalk(walked...)
	}
	s, ok := receiver.(starlark.String)
	if !ok {
		return nil
	}
	switch name {
	case "join":
		if len(args) != 1 {
			return nil
		}
		total, n := 0, 0
		iter := starlark.Iterate(args[0])
		if iter == nil {
			return nil
		}
		defer iter.Done()
		var item starlark.Value
		for iter.Next(&item) {
			total += starlark.Len(item)
			n++
			if err := checkStringLen(total + n*len(s)); err != nil {
				return err
			}
		}
	case "replace":
		if len(args) >= 2 {
			old, _ := starlark.AsString(args[0])
			replacement, _ := starlark.AsString(args[1])
			return checkStringLen(len(s) + strings.Count(string(s), old)*len(replacement))
		}
	case "format":
		largest := 0
		for _, arg := range args {
			largest = max(largest, reprLen(arg, maxStringBytes+1))
		}
		for _, kv := range kwargs {
			largest = max(largest, reprLen(kv[1], maxStringBytes+1))
		}
		return checkStringLen(len(s) + strings.Count(string(s), "{")*largest)
	}
	return nil
}

// iterating are the builtins that walk a whole iterable argument.
var iterating = map[string]bool{
	"any": true, "all": true, "dict": true, "enumerate": true, "list": true, "max": true,
	"min": true, "reversed": true, "set": true, "sorted": true, "tuple": true, "zip": true,
}

// comparing are the builtins that compare or hash the items of their
// arguments; sorted, min and max also compare what their key returns.
var comparing = map[string]bool{"dict": true, "max": true, "min": true, "set": true, "sorted": true}

// guardValue wraps a universe builtin so that it refuses to walk an
// argument with more than maxElements items, to compare or hash more than
// maxWalked, repr and str of a value whose text would be over the caps,
// and int of too many digits, and charges its result.
func guardValue(v starlark.Value) starlark.Value {
	builtin, ok := v.(*starlark.Builtin)
	if !ok {
		return v
	}
	name := builtin.Name()
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		for _, arg := range args {
			if iterating[name] {
				if err := checkElements(starlark.Len(arg)); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
			}
			if _, isString := arg.(starlark.String); (name == "repr" || name == "str" && !isString) && reprLen(arg, maxStringBytes+1) > maxStringBytes {
				return nil, fmt.Errorf("%s: the text would be more than %d bytes", name, maxStringBytes)
			}
		}
		if comparing[name] {
			if err := checkWalk(args...); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if name != "dict" { // dict(key=1) is an entry, not a key function
				kwargs = boundedKeys(name, kwargs)
			}
		}
		if name == "int" {
			if err := checkDigits(args, kwargs); err != nil {
				return nil, err
			}
		}
		result, err := starlark.Call(thread, builtin, args, kwargs)
		if err != nil || name == "range" {
			// A range is lazy: it takes no memory for its items.
			return result, err
		}
		return charge(thread, result)
	})
}

// boundedKeys wraps the key function among the arguments of sorted, min
// or max so that the keys it returns, which the builtin compares in the
// same step, hold at most maxWalked items between them.
func boundedKeys(name string, kwargs []starlark.Tuple) []starlark.Tuple {
	out := slices.Clone(kwargs)
	for i, kv := range out {
		key, ok := kv[1].(starlark.Callable)
		if kv[0] != starlark.String("key") || !ok {
			continue
		}
		walked := 0
		out[i] = starlark.Tuple{kv[0], starlark.NewBuiltin(key.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			k, err := starlark.Call(thread, key, args, kwargs)
			if err != nil {
				return nil, err
			}
			if walked += walkLen(maxWalked-walked, k); walked > maxWalked {
				return nil, fmt.Errorf("%s: the keys: %w", name, errTooMuchToWalk)
			}
			return k, nil
		})}
	}
	return out
}

// checkDigits refuses int(s, base) of a string with more digits than an
// int of maxIntBits has: the conversion is one step whose time grows
// faster than the digits do (a megabyte of them took seconds).
func checkDigits(args starlark.Tuple, kwargs []starlark.Tuple) error {
	var x, baseArg starlark.Value
	if starlark.UnpackArgs("int", args, kwargs, "x", &x, "base?", &baseArg) != nil {
		return nil // int says what is wrong with its arguments
	}
	s, ok := starlark.AsString(x)
	if !ok {
		return nil
	}
	base := 10
	if baseArg != nil {
		base, _ = starlark.AsInt32(baseArg)
	}
	s = strings.TrimLeft(s, "+-")
	if len(s) > 2 && s[0] == '0' {
		if prefixed, ok := map[byte]int{'x': 16, 'o': 8, 'b': 2}[s[1]|0x20]; ok && (base == 0 || base == prefixed) {
			base, s = prefixed, s[2:]
		}
	}
	if base < 2 || base > 36 {
		base = 10 // int refuses the base, or reads the string as decimal
	}
	digits := len(strings.TrimLeft(s, "0"))
	if float64(digits-1)*math.Log2(float64(base)) > maxIntBits {
		return fmt.Errorf("int: %d digits are more than an int of at most %d bits has", digits, maxIntBits)
	}
	return nil
}

// sum is Python's sum(iterable, start=0), which Starlark lacks, adding
// through the guard.
func sum(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var iterable starlark.Iterable
	var total starlark.Value = starlark.MakeInt(0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "iterable", &iterable, "start?", &total); err != nil {
		return nil, err
	}
	if err := checkElements(starlark.Len(iterable)); err != nil {
		return nil, fmt.Errorf("sum: %w", err)
	}
	iter := iterable.Iterate()
	defer iter.Done()
	var item starlark.Value
	for iter.Next(&item) {
		var err error
		if total, err = guardedBinary(thread, syntax.PLUS, total, item); err != nil {
			return nil, fmt.Errorf("sum: %w", err)
		}
	}
	return total, nil
}
