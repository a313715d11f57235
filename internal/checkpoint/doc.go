// Package checkpoint is cadence's durable state: the SQLite store of runs,
// steps, attempts, circuit breakers and audit events (state.db), the atomic
// file writes used for every file under .cadence/, and the project lock.
//
// state.db is the only source of truth for resume. Every write happens in one
// BEGIN IMMEDIATE transaction through [Store.Update]; the database runs in WAL
// mode with synchronous=FULL, so a committed transaction survives a crash or a
// power cut, and readers ([Store.View], [OpenReadOnly]) see a consistent
// snapshot while a run goes on. Status changes are checked against the
// transition tables in transitions.go, so a bug in a caller cannot move a
// succeeded step back to running.
//
// Timestamps are stored as fixed-width RFC 3339 text with nanoseconds in UTC
// and are read back as UTC [time.Time] values.
package checkpoint
