// Package tools defines the tools shelldon offers the model, shared by the
// worker (which offers them and runs the in-process ones) and core (which
// checks every call again before it parks or runs it): their definitions
// (name, a description written for the model, a JSON schema of the
// arguments, the tier), a strict check of the arguments the model wrote,
// and, for the FREE tools that need no program, the code that runs them
// inside the worker. It imports neither core nor the worker.
//
// Check is where every call is judged: it parses the arguments, refuses
// what can never run (a path out of the workspace, the vault, a
// credential-shaped name, a forbidden URL or git command) with an error the
// model can act on, and says the call's tier. A RISKY call carries a
// one-line risk note for the owner; a FREE call that must run a program
// (run_shell with a read-only command) is marked Sandboxed, and core runs
// it. The worker itself executes only the Local tools: get_time,
// read_file, list_dir and python_eval.
//
// python_eval evaluates one Starlark expression. Starlark bounds CPU only
// through its step counter, which does not see the work done inside a
// builtin, and has no allocation limit. So each expression runs in a
// process of its own, `shelldon-worker eval` ([ServeEval]), which the worker
// starts and kills at 2 s, and which bounds its own memory, CPU time and
// descriptors before it reads the expression (see pyproc.go); and inside
// it, every operator and builtin that can build or walk a large value goes
// through a guard that refuses it before it is built or walked, with an
// error that says which limit it met, and charges each result to a
// per-call budget (see pyguard.go).
package tools
