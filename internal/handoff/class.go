package handoff

// Class is the single category a failed attempt is diagnosed into (SPEC
// §5). The orchestrator decides retries, session continuity and circuit
// breakers from it, and inspect counts failures by it.
type Class string

// The failure classes. The first five are handoff failures, found by Check:
// the agent ran and answered, but its handoff is unusable. The rest are
// decided by whoever runs the agent.
const (
	ClassMissing     Class = "missing"      // file handoff: the file does not exist
	ClassEmpty       Class = "empty"        // no JSON value in the output, or the file is empty
	ClassInvalidJSON Class = "invalid_json" // JSON found but unrepairable
	ClassTruncated   Class = "truncated"    // the value was cut off
	ClassSchema      Class = "schema"       // parses, fails the schema
	ClassExitNonzero Class = "exit_nonzero" // agent exited non-zero without a handoff
	ClassTransient   Class = "transient"    // rate limit, overload, 5xx, network
	ClassTimeout     Class = "timeout"      // killed by timeout
	ClassStuck       Class = "stuck"        // killed by idle_timeout
	ClassTooLarge    Class = "too_large"    // output over max_bytes
	ClassInterrupted Class = "interrupted"  // cadence stopped during the attempt
	ClassHelp        Class = "help"         // help asked and the step has no on_help
	ClassBudget      Class = "budget"       // max_cost_usd reached before the attempt
	ClassCheck       Class = "check"        // the handoff was valid but a check command failed
	// ClassConfig is the workflow's mistake: the agent's or a check's
	// program could not be found or started. Never retried, and it says
	// nothing about the agent's provider, so its circuit ignores it.
	ClassConfig Class = "config"
	// ClassExpression is a when that failed when evaluated, naming the
	// expression and the field (SPEC §16.4). Never retried.
	ClassExpression Class = "expression"
	// ClassAuth is a missing, expired or invalid login of the agent's
	// CLI (an HTTP 401, "Invalid API key · Please run /login", an expired
	// OAuth token). Not retried on the same agent entry, which would fail
	// the same way in a loop: a fallback serves, or the run stops
	// resumable until someone logs in (SPEC §17). Like config, it says
	// nothing about the provider's health, so its circuit ignores it.
	ClassAuth Class = "auth"
)

// Classes lists every class, in the order of SPEC §5's table, then
// config, expression and auth.
func Classes() []Class {
	return []Class{
		ClassMissing, ClassEmpty, ClassInvalidJSON, ClassTruncated, ClassSchema,
		ClassExitNonzero, ClassTransient, ClassTimeout, ClassStuck, ClassTooLarge,
		ClassInterrupted, ClassHelp, ClassBudget, ClassCheck, ClassConfig, ClassExpression, ClassAuth,
	}
}

// IsHandoffFailure reports whether c means the agent answered with an
// unusable handoff (missing, empty, invalid_json, truncated, schema). A
// retry after such a failure continues the agent's session with a
// follow-up prompt, and it does not count against the agent's circuit.
func (c Class) IsHandoffFailure() bool {
	switch c {
	case ClassMissing, ClassEmpty, ClassInvalidJSON, ClassTruncated, ClassSchema:
		return true
	}
	return false
}

// IsAnswerFailure reports whether the agent answered and the answer was
// not good enough: a handoff failure, or a check that failed on a valid
// handoff. A retry after one continues the agent's session with a
// follow-up saying what to fix, and it does not count against the agent's
// circuit: the provider is up, the model erred.
func (c Class) IsAnswerFailure() bool {
	return c.IsHandoffFailure() || c == ClassCheck
}

// Valid reports whether c is one of the defined classes.
func (c Class) Valid() bool {
	for _, k := range Classes() {
		if c == k {
			return true
		}
	}
	return false
}
