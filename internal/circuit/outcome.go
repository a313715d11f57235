package circuit

// Outcome is what an attempt's result says about the agent's provider.
type Outcome int

// Outcomes. The zero Outcome is invalid and, like Neutral, changes nothing.
const (
	Success Outcome = iota + 1 // the provider answered
	Failure                    // the provider or the agent process is unwell
	Neutral                    // says nothing about the provider
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Neutral:
		return "neutral"
	}
	return "invalid"
}

// OutcomeFor maps an attempt's failure class ("" for success) to its effect
// on the breaker.
//
// transient, exit_nonzero, timeout and stuck are failures. Handoff failures
// (missing, empty, invalid_json, truncated, schema) and a failed check are
// successes: the provider is up and answered; the model erred, and the fix
// is a follow-up in the same session, not a pause. Everything else (interrupted, budget, help,
// too_large, config — a program of the workflow that could not be
// started — and classes unknown to this package) is neutral. An interrupted
// half-open trial is the exception the caller handles: settling it on resume
// records Failure explicitly, because a trial that never reported must not
// leave the breaker half-open forever.
func OutcomeFor(class string) Outcome {
	switch class {
	case "transient", "exit_nonzero", "timeout", "stuck":
		return Failure
	case "", "missing", "empty", "invalid_json", "truncated", "schema", "check":
		return Success
	default:
		return Neutral
	}
}
