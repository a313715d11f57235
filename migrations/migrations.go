// Package migrations holds the numbered SQL migrations of cadence's state
// database. Each file NNNN_name.sql is applied once, in order, inside a
// transaction together with recording its number in PRAGMA user_version;
// the highest applied number is the schema version. Never edit a released
// file: add the next number instead.
package migrations

import "embed"

// FS holds every migration file, embedded so the binary needs nothing on disk.
//
//go:embed *.sql
var FS embed.FS
