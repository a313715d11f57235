// Package circuit is the circuit breaker that stops cadence from hammering
// an agent whose provider is down.
//
// There is one [Breaker] per agent entry of the workflow. It is a plain value:
// [Acquire], [Record], [OpenUntilTime] and [Reset] take a breaker and return
// the next one, and the run loop stores that value in the same SQLite
// transaction as the attempt row or outcome that produced it. Nothing here
// reads a clock, holds a lock or does I/O, so the state after a resume is
// exactly what was committed (G3).
//
// # States
//
//	closed ──failures in a row──▶ open ──OpenUntil passed──▶ half_open
//	   ▲                           ▲                            │
//	   │                           └──────a trial fails─────────┤
//	   └──────────────HalfOpenCalls trials succeed──────────────┘
//
// [Reset] closes a breaker from any state, and [OpenUntilTime] opens it until
// a provider's usage limit resets. [Transition] is the table of allowed state
// changes.
//
// # What counts
//
// Only failures that say the provider or the agent process is unwell count:
// transient, exit_nonzero, timeout, stuck. A handoff failure (missing, empty,
// invalid_json, truncated, schema) counts as a success: the provider answered
// and the model got the format wrong, which a retry in the same session
// fixes; opening the breaker would only delay that retry. Failures that say
// nothing about the provider (interrupted, budget, help, too_large) are
// neutral. See [OutcomeFor].
//
// # Generations
//
// Every state change bumps [Breaker.Generation], and an attempt remembers the
// generation it was admitted under. Its outcome is applied only if the
// breaker is still in that generation. This keeps late results from
// rewriting history: an attempt that started while the breaker was closed
// and finished after it opened (or after a manual reset) must not count
// against, or close, a breaker that has moved on; and an interrupted
// half-open trial that is settled on resume is matched to the trial it was,
// not to a newer one.
package circuit
