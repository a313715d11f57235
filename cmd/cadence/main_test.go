package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	_ "modernc.org/sqlite"
)

// TestMain makes this test binary double as the cadence command: scripts and
// the guarantee tests start it as a real subprocess named cadence (found on
// PATH), and the sim preset starts it again as `cadence agent sim`. The
// PostgreSQL cluster that tests may have started is stopped after them.
func TestMain(m *testing.M) {
	testscript.Main(stopClusterAfter{m}, map[string]func(){
		"cadence": func() { os.Exit(runProcess(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs testdata/script/*.txtar: each is a project tree, the
// cadence commands to run on it, and their expected output and exit codes.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("NO_COLOR", "1")
			e.Setenv("CADENCE_FAILPOINT", "")
			// Race-enabled binaries otherwise pause a second at every exit.
			e.Setenv("GORACE", "atexit_sleep_ms=0")
			// Scripts that run the repository's own files (its release
			// check) find them here, and go commands share the build
			// cache of the go that runs the tests.
			root, err := filepath.Abs(filepath.Join("..", ".."))
			if err != nil {
				return err
			}
			e.Setenv("CADENCE_REPO", root)
			if cache := goCache(); cache != "" {
				e.Setenv("GOCACHE", cache)
			}
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsoneq":  cmdJSONEq,
			"exits":   cmdExits,
			"jsonlen": cmdJSONLen,
			"sqldump": cmdSQLDump,
			"jsonenv": cmdJSONEnv,
		},
	})
}

// goCache is the build cache go commands use outside the scripts, whose
// HOME is not a directory: $GOCACHE, else go's default under the user's
// cache directory ("" when neither is known).
func goCache() string {
	if c := os.Getenv("GOCACHE"); c != "" {
		return c
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "go-build")
	}
	return ""
}

// cmdExits implements `exits CODE PROG [ARGS...]`: run PROG and require
// exactly that exit code (exec only tells zero from non-zero). stdout and
// stderr are kept for the following stdout/stderr checks.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdJSONEq implements `jsoneq FILE POINTER JSON`: the value at the JSON
// pointer in FILE must equal the given JSON literal.
func cmdJSONEq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsoneq FILE POINTER JSON")
	}
	var doc any
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	got, err := pointerGet(doc, args[1])
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	var want any
	wdec := json.NewDecoder(strings.NewReader(args[2]))
	wdec.UseNumber()
	if err := wdec.Decode(&want); err != nil {
		ts.Fatalf("expected value %q is not JSON: %v", args[2], err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	equal := bytes.Equal(gb, wb)
	if equal == neg {
		ts.Fatalf("%s %s: got %s, want %s%s", args[0], args[1], gb, map[bool]string{true: "not ", false: ""}[neg], wb)
	}
}

// cmdJSONEnv implements `jsonenv VAR FILE POINTER`: set the environment
// variable VAR to the string at the JSON pointer in FILE, for the commands
// that follow (a run id a later command names, say).
func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: jsonenv VAR FILE POINTER")
	}
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[1])), &doc); err != nil {
		ts.Fatalf("%s: %v", args[1], err)
	}
	v, err := pointerGet(doc, args[2])
	if err != nil {
		ts.Fatalf("%s: %v", args[1], err)
	}
	s, ok := v.(string)
	if !ok {
		ts.Fatalf("%s %s: not a string", args[1], args[2])
	}
	ts.Setenv(args[0], s)
}

// cmdJSONLen implements `jsonlen FILE POINTER N`: the array (or object) at
// the JSON pointer in FILE has N elements.
func cmdJSONLen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: jsonlen FILE POINTER N")
	}
	var doc any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc); err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	v, err := pointerGet(doc, args[1])
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	n := -1
	switch x := v.(type) {
	case []any:
		n = len(x)
	case map[string]any:
		n = len(x)
	default:
		ts.Fatalf("%s %s: not an array or object", args[0], args[1])
	}
	if strconv.Itoa(n) != args[2] {
		ts.Fatalf("%s %s: %d elements, want %s", args[0], args[1], n, args[2])
	}
}

func pointerGet(v any, ptr string) (any, error) {
	if ptr == "" || ptr == "/" {
		return v, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, fmt.Errorf("%s: no key %q", ptr, tok)
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("%s: no index %q in an array of %d", ptr, tok, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("%s: %q indexes a scalar", ptr, tok)
		}
	}
	return v, nil
}

// cmdSQLDump implements `sqldump DB`: every row of every table of the
// SQLite database DB, opened read-only, one line per row, sorted, on
// stdout. Comparing two dumps shows whether a command changed any row.
func cmdSQLDump(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sqldump DB")
	}
	db, err := sql.Open("sqlite", "file:"+ts.MkAbs(args[0])+"?mode=ro")
	if err != nil {
		ts.Fatalf("open %s: %v", args[0], err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		ts.Fatalf("list tables: %v", err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			ts.Fatalf("list tables: %v", err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	var lines []string
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			ts.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				ts.Fatalf("read %s: %v", table, err)
			}
			var b strings.Builder
			b.WriteString(table)
			for i, c := range cols {
				fmt.Fprintf(&b, " %s=%q", c, fmt.Sprint(vals[i]))
			}
			lines = append(lines, b.String())
		}
		rows.Close()
	}
	slices.Sort(lines)
	fmt.Fprintln(ts.Stdout(), strings.Join(lines, "\n"))
}
