// Package checkpoint is cadence's durable state: the store of runs, steps,
// attempts, circuit breakers and audit events, the atomic file writes used
// for every file under .cadence/, and the project lock.
//
// The store is a SQLite file (state.db, the default) or, for processes on
// several machines sharing a run, a PostgreSQL database (Open with a
// postgres:// URL; see postgres.go). Both have the same tables, queries and
// transition checks; the caller does not see which it has.
//
// The store is the only source of truth for resume. Every write happens in
// one transaction through [Store.Update]: on SQLite BEGIN IMMEDIATE, in WAL
// mode with synchronous=FULL, so a committed transaction survives a crash
// or a power cut; on PostgreSQL a SERIALIZABLE transaction, run again when
// a concurrent writer made its reads stale. Readers ([Store.View],
// [OpenReadOnly]) see a consistent snapshot while a run goes on. Status
// changes are checked against the transition tables in transitions.go, so
// a bug in a caller cannot move a succeeded step back to running.
//
// Timestamps are stored as fixed-width RFC 3339 text with nanoseconds in UTC
// and are read back as UTC [time.Time] values.
package checkpoint
