// Package migrations holds the numbered SQL migrations of cadence's state
// database, one set per engine: the SQLite files NNNN_name.sql here, and
// the PostgreSQL files in postgres/. Each file is applied once, in order,
// inside a transaction together with recording its number (SQLite: PRAGMA
// user_version; PostgreSQL: a row of the schema_version table); the
// highest applied number is the schema version. The two sets are numbered
// independently and describe the same tables. Never edit a released file:
// add the next number instead (to both sets when both change).
package migrations

import (
	"embed"
	"io/fs"
)

// FS holds every SQLite migration file, embedded so the binary needs
// nothing on disk.
//
//go:embed *.sql
var FS embed.FS

//go:embed postgres/*.sql
var postgresFiles embed.FS

// Postgres holds every PostgreSQL migration file, at its root like FS.
var Postgres = subFS(postgresFiles, "postgres")

// subFS returns the subtree dir of fsys. fs.Sub fails only for a
// malformed dir, which a constant is not; an empty FS would be reported
// by the loader as "no migrations found".
func subFS(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return embed.FS{}
	}
	return sub
}
