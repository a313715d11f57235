// Package workflow loads and checks a project's .cadence/workflow.yaml.
//
// Loading is strict and complete: every mistake the package can find before
// a run starts (an unknown key, a value of the wrong type, a bad duration,
// an agent that does not exist, a schema that does not compile, a prompt
// template that references a step which has not run yet, a path that leaves
// the project) is reported with the file, line, column and key path where it
// was written, and all of them are reported at once, so a user fixes the file
// in one pass instead of one error per run.
//
// The YAML is walked as a syntax tree rather than unmarshalled into structs:
// that is what lets every error, including those found only after decoding
// (duplicate ids, cross references, files on disk), point at the line of the
// offending key, and what lets a step override the workflow's defaults key by
// key.
//
// A workflow is a graph (SPEC section 16): each step needs others (by
// default the one before it), may be a command, a loop of inner steps or an
// approval gate, and may run only when a CEL expression holds. The graph is
// checked whole at load time: needs name steps beside the step, have no
// cycle, and every template, expression and map step reads only the
// outputs of the step's ancestors. Expressions are compiled and
// type-checked once and evaluated with a cost limit (Expr.Eval);
// Workflow.Ancestors, Dependents and Order give a scheduler the graph;
// ResolveInputs checks the values a run is started with.
package workflow
