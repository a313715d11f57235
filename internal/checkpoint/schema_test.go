package checkpoint

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// tableShape is what must be alike in the two engines' schemas: the
// columns in order, each with its kind and nullability and default, the
// primary key, the foreign keys and the indexes.
type tableShape struct {
	Columns []string // "name kind null|notnull default"
	PK      []string
	FKs     []string // "cols -> table(cols)"
	Indexes []string // "name [unique] [partial] (cols)"
}

// The kinds of column, named alike for both engines. SQLite keeps flags as
// INTEGER 0/1, PostgreSQL as BOOLEAN; both read back as Go bool.
const (
	kindText  = "text"
	kindInt   = "int"
	kindFloat = "float"
	kindFlag  = "flag"
)

// flagColumns are the INTEGER columns of SQLite that hold 0 or 1.
var flagColumns = map[string]bool{
	"steps.fresh_session": true, "steps.cost_known": true, "attempts.uncounted": true, "checks.timed_out": true,
}

// The PostgreSQL schema after its migrations is the SQLite schema after
// its own: same tables, columns, keys and indexes.
func TestSchemasOfBothEnginesMatch(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lite, err := sqliteShapes(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	pgs, err := postgresShapes(ctx, openPostgresSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) < 8 {
		t.Fatalf("SQLite schema has only %d tables: %v", len(lite), keys(lite))
	}
	if got, want := keys(pgs), keys(lite); !reflect.DeepEqual(got, want) {
		t.Fatalf("tables: PostgreSQL %v, SQLite %v", got, want)
	}
	for name, want := range lite {
		got := pgs[name]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("table %s differs:\nPostgreSQL %s\nSQLite     %s", name, dump(got), dump(want))
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dump(s tableShape) string {
	return fmt.Sprintf("\n  columns %q\n  pk %q\n  fks %q\n  indexes %q", s.Columns, s.PK, s.FKs, s.Indexes)
}

func sqliteShapes(ctx context.Context, db *sqlx.DB) (map[string]tableShape, error) {
	var tables []string
	if err := db.SelectContext(ctx, &tables, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`); err != nil {
		return nil, err
	}
	out := map[string]tableShape{}
	for _, table := range tables {
		var cols []struct {
			Name    string  `db:"name"`
			Type    string  `db:"type"`
			NotNull bool    `db:"notnull"`
			Default *string `db:"dflt_value"`
			PK      int     `db:"pk"`
		}
		if err := db.SelectContext(ctx, &cols, `SELECT name, type, "notnull", dflt_value, pk
			FROM pragma_table_info(?) ORDER BY cid`, table); err != nil {
			return nil, err
		}
		var shape tableShape
		pk := map[int]string{}
		for _, c := range cols {
			kind := map[string]string{"TEXT": kindText, "INTEGER": kindInt, "REAL": kindFloat}[c.Type]
			if flagColumns[table+"."+c.Name] {
				kind = kindFlag
			}
			// An INTEGER PRIMARY KEY is never NULL, whatever table_info says.
			notNull := c.NotNull || c.PK > 0
			shape.Columns = append(shape.Columns, column(c.Name, kind, notNull, c.Default))
			if c.PK > 0 {
				pk[c.PK] = c.Name
			}
		}
		for i := 1; i <= len(pk); i++ {
			shape.PK = append(shape.PK, pk[i])
		}
		var fks []struct {
			ID    int    `db:"id"`
			Table string `db:"table"`
			From  string `db:"from"`
			To    string `db:"to"`
		}
		if err := db.SelectContext(ctx, &fks, `SELECT id, "table", "from", "to"
			FROM pragma_foreign_key_list(?) ORDER BY id, seq`, table); err != nil {
			return nil, err
		}
		byID := map[int][3][]string{}
		for _, fk := range fks {
			e := byID[fk.ID]
			e[0], e[1], e[2] = append(e[0], fk.From), []string{fk.Table}, append(e[2], fk.To)
			byID[fk.ID] = e
		}
		for _, e := range byID {
			shape.FKs = append(shape.FKs, fkText(e[0], e[1][0], e[2]))
		}
		sort.Strings(shape.FKs)
		var idx []struct {
			Name    string `db:"name"`
			Unique  bool   `db:"unique"`
			Partial bool   `db:"partial"`
		}
		if err := db.SelectContext(ctx, &idx, `SELECT name, "unique", partial FROM pragma_index_list(?)
			WHERE origin = 'c'`, table); err != nil {
			return nil, err
		}
		for _, ix := range idx {
			var cols []string
			if err := db.SelectContext(ctx, &cols, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, ix.Name); err != nil {
				return nil, err
			}
			shape.Indexes = append(shape.Indexes, indexText(ix.Name, ix.Unique, ix.Partial, cols))
		}
		sort.Strings(shape.Indexes)
		out[table] = shape
	}
	return out, nil
}

func postgresShapes(ctx context.Context, db *sqlx.DB) (map[string]tableShape, error) {
	var tables []string
	if err := db.SelectContext(ctx, &tables, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_version'
		ORDER BY table_name`); err != nil {
		return nil, err
	}
	out := map[string]tableShape{}
	for _, table := range tables {
		var cols []struct {
			Name     string  `db:"column_name"`
			Type     string  `db:"data_type"`
			Nullable string  `db:"is_nullable"`
			Default  *string `db:"column_default"`
		}
		if err := db.SelectContext(ctx, &cols, `SELECT column_name, data_type, is_nullable, column_default
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1
			ORDER BY ordinal_position`, table); err != nil {
			return nil, err
		}
		var shape tableShape
		for _, c := range cols {
			kind := map[string]string{"text": kindText, "bigint": kindInt, "double precision": kindFloat, "boolean": kindFlag}[c.Type]
			shape.Columns = append(shape.Columns, column(c.Name, kind, c.Nullable == "NO", pgDefault(c.Default)))
		}
		if err := db.SelectContext(ctx, &shape.PK, `SELECT a.attname FROM pg_index i
			CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
			WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY k.ord`, table); err != nil {
			return nil, err
		}
		var fks []struct {
			From  string `db:"from_cols"`
			Table string `db:"to_table"`
			To    string `db:"to_cols"`
		}
		if err := db.SelectContext(ctx, &fks, `SELECT
			(SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
				JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS from_cols,
			c.confrelid::regclass::text AS to_table,
			(SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
				JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum) AS to_cols
			FROM pg_constraint c WHERE c.conrelid = $1::regclass AND c.contype = 'f'`, table); err != nil {
			return nil, err
		}
		for _, fk := range fks {
			shape.FKs = append(shape.FKs, fkText(strings.Split(fk.From, ","), fk.Table, strings.Split(fk.To, ",")))
		}
		sort.Strings(shape.FKs)
		var idx []struct {
			Name    string `db:"name"`
			Unique  bool   `db:"unique"`
			Partial bool   `db:"partial"`
			Cols    string `db:"cols"`
		}
		if err := db.SelectContext(ctx, &idx, `SELECT c.relname AS name, i.indisunique AS unique,
			i.indpred IS NOT NULL AS partial,
			(SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) AS cols
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = $1::regclass AND NOT i.indisprimary`, table); err != nil {
			return nil, err
		}
		for _, ix := range idx {
			shape.Indexes = append(shape.Indexes, indexText(ix.Name, ix.Unique, ix.Partial, strings.Split(ix.Cols, ",")))
		}
		sort.Strings(shape.Indexes)
		out[table] = shape
	}
	return out, nil
}

func column(name, kind string, notNull bool, def *string) string {
	null := "null"
	if notNull {
		null = "notnull"
	}
	d := "-"
	if def != nil {
		d = *def
	}
	return strings.Join([]string{name, kind, null, d}, " ")
}

// pgDefault spells a PostgreSQL column default as SQLite does: a text
// literal without its ::text cast, false and true as 0 and 1.
func pgDefault(def *string) *string {
	if def == nil {
		return nil
	}
	d := strings.TrimSuffix(*def, "::text")
	switch d {
	case "false":
		d = "0"
	case "true":
		d = "1"
	}
	return &d
}

func fkText(from []string, table string, to []string) string {
	return strings.Join(from, ",") + " -> " + table + "(" + strings.Join(to, ",") + ")"
}

func indexText(name string, unique, partial bool, cols []string) string {
	s := name
	if unique {
		s += " unique"
	}
	if partial {
		s += " partial"
	}
	return s + " (" + strings.Join(cols, ",") + ")"
}

// The CHECK constraints, foreign keys and unique indexes refuse bad rows
// on both engines, even rows written past the store.
func TestConstraintsRefuseBadRows(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		seedRun(t, s, "r", t0, "plan")
		const step = `INSERT INTO steps (run_id, step_id, item_key, idx, item_idx, agent, status, max_attempts, updated_at) VALUES `
		const attempt = `INSERT INTO attempts (run_id, step_id, n, kind, status, started_at) VALUES `
		const check = `INSERT INTO checks (run_id, step_id, n, seq, name, command, status, started_at) VALUES `
		bad := []struct{ name, query string }{
			{"run status", `INSERT INTO runs (id, status, workflow_path, workflow_sha256, workflow_yaml, started_at, updated_at)
				VALUES ('x', 'paused', '', '', '', '', '')`},
			{"step status", step + `('r', 's2', '', 5, 0, 'a', 'done', 1, '')`},
			{"step of no run", step + `('ghost', 's2', '', 5, 0, 'a', 'pending', 1, '')`},
			{"two steps at one position", step + `('r', 's2', '', 0, 0, 'a', 'pending', 1, '')`},
			{"two items at one position", step + `('r', 'plan', 'a', 0, 1, 'a', 'pending', 1, ''), ('r', 'plan', 'b', 1, 1, 'a', 'pending', 1, '')`},
			{"attempt kind", attempt + `('r', 'plan', 1, 'retry', 'running', '')`},
			{"attempt status", attempt + `('r', 'plan', 1, 'initial', 'ok', '')`},
			{"attempt number 0", attempt + `('r', 'plan', 0, 'initial', 'running', '')`},
			{"attempt of no step", attempt + `('r', 'ghost', 1, 'initial', 'running', '')`},
			{"message role", `INSERT INTO session_messages (session_id, seq, run_id, step_id, attempt, role, content, created_at)
				VALUES ('s', 1, 'r', 'plan', 1, 'tool', '', '')`},
			{"check status", check + `('r', 'plan', 1, 1, 'c', 'true', 'ok', '')`},
			{"check seq 0", check + `('r', 'plan', 1, 0, 'c', 'true', 'running', '')`},
			{"dead letter of no item", `INSERT INTO dead_letters (run_id, step_id, item_key, class, signature, attempts, first_at, last_at, dead_at)
				VALUES ('r', 'plan', 'ghost', 'schema', '', 1, '', '', '')`},
			{"event of no run", `INSERT INTO events (run_id, at, kind) VALUES ('ghost', '', 'x')`},
		}
		for _, b := range bad {
			if _, err := s.db.Exec(b.query); err == nil {
				t.Errorf("%s: accepted", b.name)
			}
		}
	})
}
