package checkpoint

import (
	"strings"

	"github.com/jmoiron/sqlx"
)

// engine is the database a store runs on. The store's queries are written
// once, for SQLite, with "?" parameters; on PostgreSQL each is rewritten
// by engine.query before it runs.
type engine uint8

const (
	engineSQLite engine = iota
	enginePostgres
)

func (e engine) String() string {
	if e == enginePostgres {
		return "PostgreSQL"
	}
	return "SQLite"
}

// IsPostgresURL reports whether target names a PostgreSQL database
// (postgres:// or postgresql://) rather than a SQLite file.
func IsPostgresURL(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// postgresQueries are the queries whose SQLite text PostgreSQL does not
// accept, each with its PostgreSQL text (still with "?" parameters).
var postgresQueries = map[string]string{
	// PostgreSQL has no CROSS JOIN … ON, and its planner needs no hint to
	// walk the steps in order.
	allAttemptsQuery:      strings.Replace(allAttemptsQuery, "CROSS JOIN", "JOIN", 1),
	allAttemptsBriefQuery: strings.Replace(allAttemptsBriefQuery, "CROSS JOIN", "JOIN", 1),
	// Claimers at once take different items (see claimableItemQuery).
	claimableItemQuery: claimableItemQuery + " FOR UPDATE OF s SKIP LOCKED",
	// A lease's check reads the database's clock in the same round trip
	// (Tx.fence).
	fenceQuery: strings.Replace(fenceQuery, " FROM leases", ", clock_timestamp() FROM leases", 1),
	// to_regclass is NULL for a table that does not exist.
	checksTableQuery: `SELECT COUNT(to_regclass('checks'))`,
}

// query returns the text of query for this engine: SQLite's unchanged; for
// PostgreSQL its replacement if it has one, with "?" parameters numbered
// $1, $2… Queries with ":name" parameters need no rewriting: sqlx numbers
// them for the driver.
func (e engine) query(query string) string {
	if e == engineSQLite {
		return query
	}
	if pq, ok := postgresQueries[query]; ok {
		query = pq
	}
	return sqlx.Rebind(sqlx.DOLLAR, query)
}
