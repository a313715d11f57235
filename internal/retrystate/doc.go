// Package retrystate decides whether and when a failed step attempt is tried
// again, and waits for that moment.
//
// A [Policy] holds a step's retry settings (retry: in workflow.yaml). After a
// failed attempt the run loop asks [Policy.Retryable] about the failure
// class, [Policy.Exhausted] about the attempt count, draws a delay with
// [Policy.Delay] and turns it into an absolute deadline with [Schedule]. That
// deadline (next_retry_at) and the drawn delay are committed before the wait
// begins, so a resumed run waits only what remains of it ([Remaining],
// [WaitUntil]) and never redraws the jitter.
//
// Deadlines are wall-clock instants in UTC, because they must mean the same
// thing to the next process that reads them from the database. A wall clock
// can jump, so the waiting code re-reads it often and the scheduling code
// never moves a stored deadline earlier ([Later]): a clock that jumped
// backwards can make a wait longer, never shorter.
//
// The package is pure: it imports no other package of this module and does
// no I/O besides reading the clock.
package retrystate
