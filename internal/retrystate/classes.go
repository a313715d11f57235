package retrystate

import "slices"

// Failure classes that the retry policy treats specially. The full list of
// classes is owned by the handoff and agent packages; these names are part of
// the workflow file format (retry.on, retry.never) and so cannot change.
const (
	// ClassTooLarge is output over handoff.max_bytes. Retrying would most
	// likely produce the same oversized output, so it is not retried unless
	// retry.on names it.
	ClassTooLarge = "too_large"
	// ClassBudget is a step or run that reached max_cost_usd. Always terminal.
	ClassBudget = "budget"
	// ClassHelp is an agent that asked for help. It is answered by help
	// rounds (on_help), never by a plain retry. Always terminal.
	ClassHelp = "help"
	// ClassConfig is a program of the workflow that could not be started.
	// Waiting does not fix the workflow file. Always terminal.
	ClassConfig = "config"
	// ClassExpression is a when or until that failed when evaluated (a
	// field the output lacks). The same values give the same failure.
	// Always terminal.
	ClassExpression = "expression"
	// ClassAuth is an agent whose login is missing, expired or invalid.
	// The same login fails the same way: never retried on the same agent
	// (a fallback, or a person logging in, is the way on).
	ClassAuth = "auth"
)

// Classes are the failure classes a step attempt can end with (SPEC
// section 5's diagnosis classes and the ones cadence adds for its own
// failures), in the SPEC's order: the names retry.on and retry.never may
// use. The workflow loader checks those lists against this one, so that a
// file it accepts is a policy Validate accepts.
var Classes = []string{
	"missing", "empty", "invalid_json", "truncated", "schema",
	"exit_nonzero", "transient", "timeout", "stuck", ClassTooLarge,
	"interrupted", ClassHelp, ClassBudget, "check",
	ClassConfig, ClassExpression, ClassAuth,
}

// knownClass reports whether class is one a step attempt can end with. It
// is used only to reject misspelt names in retry.on and retry.never.
func knownClass(class string) bool {
	return slices.Contains(Classes, class)
}

// Terminal reports whether class ends a step no matter what the policy
// says, so that naming it in retry.on is a mistake.
func Terminal(class string) bool {
	return class == ClassBudget || class == ClassHelp || class == ClassConfig || class == ClassExpression || class == ClassAuth
}
