package checkpoint

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Every hot-path query must prepare on a fresh database: one that does not
// is silently parsed on each call, which is what the cache exists to avoid.
// SQLite only: on PostgreSQL pgx prepares and caches statements itself.
func TestStatementsPrepared(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	rw, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	tests := []struct {
		name      string
		store     *Store
		wantNamed []string
	}{
		{"read-write", rw, writeNamedQueries},
		{"read-only", ro, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, q := range readQueries {
				if _, ok := tt.store.stmts.positional[q]; !ok {
					t.Errorf("not prepared: %s", firstLine(q))
				}
			}
			if got := len(tt.store.stmts.named); got != len(tt.wantNamed) {
				t.Errorf("%d named statements prepared, want %d", got, len(tt.wantNamed))
			}
			for _, q := range tt.wantNamed {
				if _, ok := tt.store.stmts.named[q]; !ok {
					t.Errorf("not prepared: %s", firstLine(q))
				}
			}
		})
	}
}

// A prepared statement is reused by every transaction; it must see the
// writes committed since it was prepared, including another store's.
func TestStatementsSeeLaterWrites(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := context.Background()
		target := e.target(t)
		rw := openStore(t, target)
		ro, err := OpenReadOnly(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		seedRun(t, rw, "r", t0, "plan")
		for n := 1; n <= 3; n++ {
			update(t, rw, func(tx *Tx) error { return tx.InsertAttempt(sampleAttempt("r", "plan", n)) })
			for _, s := range []*Store{rw, ro} {
				view(t, s, func(tx *Tx) error {
					last, err := tx.LastAttempt("r", "plan")
					if err != nil {
						return err
					}
					if last.N != n {
						t.Errorf("%s: last attempt %d, want %d", s.Path(), last.N, n)
					}
					return nil
				})
			}
		}
	})
}

func TestAllAttemptsBrief(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		s := e.newStore(t)
		// Steps in an order unlike their ids, so the order by position shows.
		seedRun(t, s, "r", t0, "zeta", "alpha")
		seedRun(t, s, "other", t0, "zeta")
		full := fullAttempt("r", "alpha")
		second := sampleAttempt("r", "alpha", 2)
		second.Prompt, second.DetailsJSON = "second prompt", []byte(`{}`)
		first := sampleAttempt("r", "zeta", 1)
		first.Prompt = "zeta prompt"
		update(t, s, func(tx *Tx) error {
			for _, a := range []Attempt{sampleAttempt("r", "alpha", 1), second, first, sampleAttempt("other", "zeta", 1)} {
				if err := tx.InsertAttempt(a); err != nil {
					return err
				}
			}
			return tx.UpdateAttempt(full)
		})
		var all, brief []Attempt
		view(t, s, func(tx *Tx) error {
			var err error
			if all, err = tx.AllAttempts("r"); err != nil {
				return err
			}
			brief, err = tx.AllAttemptsBrief("r")
			return err
		})
		wantOrder := []string{"zeta/1", "alpha/1", "alpha/2"}
		if got := attemptKeys(all); !reflect.DeepEqual(got, wantOrder) {
			t.Fatalf("AllAttempts order %v, want %v", got, wantOrder)
		}
		if got := attemptKeys(brief); !reflect.DeepEqual(got, wantOrder) {
			t.Fatalf("AllAttemptsBrief order %v, want %v", got, wantOrder)
		}
		for i := range all {
			if all[i].Prompt == "" {
				t.Errorf("AllAttempts %s: prompt missing", wantOrder[i])
			}
			want := all[i]
			want.Prompt, want.DetailsJSON = "", nil
			if !reflect.DeepEqual(brief[i], want) {
				t.Errorf("AllAttemptsBrief %s:\n got  %+v\n want %+v", wantOrder[i], brief[i], want)
			}
		}
		if got := utc(full); !reflect.DeepEqual(all[1], got) {
			t.Errorf("AllAttempts alpha/1:\n got  %+v\n want %+v", all[1], got)
		}
	})
}

// The whole-run queries spell out their columns (qualified for the join);
// they must name the same columns, in the same order, as attemptColumns.
func TestWholeRunColumns(t *testing.T) {
	want := columnNames(attemptColumns)
	for name, list := range map[string]string{"all": allAttemptColumns, "brief": briefAttemptColumns} {
		var got []string
		for _, c := range columnNames(list) {
			if _, alias, ok := strings.Cut(c, " AS "); ok {
				c = alias
			}
			got = append(got, strings.TrimPrefix(c, "a."))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s columns:\n got  %v\n want %v", name, got, want)
		}
	}
}

func columnNames(list string) []string {
	var out []string
	for _, c := range strings.Split(list, ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

func attemptKeys(as []Attempt) []string {
	keys := make([]string, len(as))
	for i, a := range as {
		keys[i] = a.StepID + "/" + strconv.Itoa(a.N)
	}
	return keys
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The rows' dest methods scan by position: their pointers must follow the
// column lists exactly, or values would land in the wrong fields.
func TestRowDestOrder(t *testing.T) {
	var (
		a attemptRow
		s stepRow
	)
	tests := []struct {
		name    string
		row     any // pointer to the row
		dest    []any
		columns string
	}{
		{"attempt", &a, a.dest(), attemptColumns},
		{"step", &s, s.dest(), stepColumns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := reflect.ValueOf(tt.row).Elem()
			byAddr := map[uintptr]string{}
			for i := range v.NumField() {
				byAddr[v.Field(i).Addr().Pointer()] = v.Type().Field(i).Tag.Get("db")
			}
			var got []string
			for _, p := range tt.dest {
				got = append(got, byAddr[reflect.ValueOf(p).Pointer()])
			}
			if want := columnNames(tt.columns); !reflect.DeepEqual(got, want) {
				t.Errorf("dest order:\n got  %v\n want %v", got, want)
			}
			if len(tt.dest) != v.NumField() {
				t.Errorf("dest has %d pointers for %d fields", len(tt.dest), v.NumField())
			}
		})
	}
}
