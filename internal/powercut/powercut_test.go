package powercut

import (
	"bufio"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// mountFS mounts a power-cut filesystem over a fresh backing directory
// holding files (path → contents) and unmounts it when the test ends. A
// machine that cannot mount it fails the test, saying what is missing:
// the durability tests of the project need it, and never pass without.
func mountFS(t *testing.T, model Model, files map[string]string) *FS {
	t.Helper()
	backing, mnt := t.TempDir(), t.TempDir()
	for name, content := range files {
		p := filepath.Join(backing, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Mount(backing, mnt, model)
	if err != nil {
		t.Fatalf("the power-cut filesystem cannot be mounted on this machine, so the power-cut tests cannot run: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// mfile is a file of the model: its identity is the pointer.
type mfile struct{ data []byte }

// fsModel is what the filesystem must do, in memory: the names and data
// visible now, and those a cut would keep.
type fsModel struct {
	model   Model
	visible map[string]map[string]*mfile // directory → name → file
	names   map[string]map[string]*mfile // durable names
	data    map[*mfile][]byte            // durable data
}

func newModel(model Model, dirs []string) *fsModel {
	m := &fsModel{model: model, visible: map[string]map[string]*mfile{}, names: map[string]map[string]*mfile{}, data: map[*mfile][]byte{}}
	for _, d := range dirs {
		m.visible[d], m.names[d] = map[string]*mfile{}, map[string]*mfile{}
	}
	return m
}

// commitNames makes the names of dir durable, or all of them on ext4.
func (m *fsModel) commitNames(dir string) {
	for d, names := range m.visible {
		if d != dir && m.model != Ext4 {
			continue
		}
		m.names[d] = map[string]*mfile{}
		for n, f := range names {
			m.names[d][n] = f
		}
	}
}

// cut is the model's power cut: what is visible is what was durable.
func (m *fsModel) cut() {
	data := map[*mfile][]byte{}
	for d, names := range m.names {
		m.visible[d] = map[string]*mfile{}
		for n, f := range names {
			nf := &mfile{data: append([]byte(nil), m.data[f]...)}
			m.visible[d][n] = nf
			data[nf] = append([]byte(nil), nf.data...)
		}
		m.names[d] = cloneNames(m.visible[d])
	}
	m.data = data
}

func cloneNames(in map[string]*mfile) map[string]*mfile {
	out := map[string]*mfile{}
	for k, v := range in {
		out[k] = v
	}
	return out
}

// expected is the tree the model says is visible, as Durable lists one.
func (m *fsModel) expected() map[string]string {
	out := map[string]string{}
	for d, names := range m.visible {
		prefix := ""
		if d != "" {
			prefix = d + "/"
			out[prefix] = ""
		}
		for n, f := range names {
			out[prefix+n] = string(f.data)
		}
	}
	return out
}

// tree reads the mounted tree as Durable lists one.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		if info.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRandomOperationsAgainstTheModel runs random sequences of writes,
// truncations, fsyncs of files and directories, renames and removals on
// the mounted filesystem and on an in-memory model of each metadata model,
// cuts the power a few times in each, and compares: after every cut the
// tree must be exactly what the model kept, and between cuts exactly what
// was written.
func TestRandomOperationsAgainstTheModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("POWERCUT_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("POWERCUT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (POWERCUT_SEED=%d to replay)", seed, seed)
	for _, model := range []Model{POSIX, Ext4} {
		t.Run(model.String(), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(seed))
			for seq := range 6 {
				randomSequence(t, model, rnd, seq)
			}
		})
	}
}

// randomSequence is one sequence of 3 cuts of 40 operations each, on a
// root directory and a subdirectory d, over five names.
func randomSequence(t *testing.T, model Model, rnd *rand.Rand, seq int) {
	f := mountFS(t, model, map[string]string{"d/": ""})
	m := newModel(model, []string{"", "d"})
	dirs := []string{"", "d"}
	names := []string{"a", "b", "c", "e", "g"}
	var log []string
	path := func(d, n string) string { return filepath.Join(f.Dir(), d, n) }
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("sequence %d: %s\noperations:\n  %s", seq, fmt.Sprintf(format, args...), strings.Join(log, "\n  "))
	}
	for round := range 3 {
		for range 40 {
			d, n := dirs[rnd.Intn(2)], names[rnd.Intn(len(names))]
			cur := m.visible[d][n]
			switch op := rnd.Intn(7); {
			case op <= 1: // write
				off, size := rnd.Intn(6000), 1+rnd.Intn(5000)
				b := make([]byte, size)
				for i := range b {
					b[i] = byte('a' + rnd.Intn(26))
				}
				log = append(log, fmt.Sprintf("write %s/%s at %d, %d bytes", d, n, off, size))
				fd, err := os.OpenFile(path(d, n), os.O_RDWR|os.O_CREATE, 0o644)
				if err == nil {
					_, err = fd.WriteAt(b, int64(off))
					err = closeErr(fd, err)
				}
				if err != nil {
					fail("%v", err)
				}
				if cur == nil {
					cur = &mfile{}
					m.visible[d][n] = cur
				}
				if len(cur.data) < off+size {
					cur.data = append(cur.data, make([]byte, off+size-len(cur.data))...)
				}
				copy(cur.data[off:], b)
			case op == 2 && cur != nil: // truncate
				size := rnd.Intn(8000)
				log = append(log, fmt.Sprintf("truncate %s/%s to %d", d, n, size))
				if err := os.Truncate(path(d, n), int64(size)); err != nil {
					fail("%v", err)
				}
				if size <= len(cur.data) {
					cur.data = cur.data[:size]
				} else {
					cur.data = append(cur.data, make([]byte, size-len(cur.data))...)
				}
			case op == 3 && cur != nil: // fsync the file
				log = append(log, fmt.Sprintf("fsync %s/%s", d, n))
				if err := syncPath(path(d, n)); err != nil {
					fail("%v", err)
				}
				m.data[cur] = append([]byte(nil), cur.data...)
				if model == Ext4 {
					m.commitNames("")
				}
			case op == 4: // fsync the directory
				log = append(log, fmt.Sprintf("fsync %s/", d))
				if err := syncPath(filepath.Join(f.Dir(), d)); err != nil {
					fail("%v", err)
				}
				m.commitNames(d)
			case op == 5 && cur != nil: // rename, maybe over another file
				d2, n2 := dirs[rnd.Intn(2)], names[rnd.Intn(len(names))]
				log = append(log, fmt.Sprintf("rename %s/%s to %s/%s", d, n, d2, n2))
				if err := os.Rename(path(d, n), path(d2, n2)); err != nil {
					fail("%v", err)
				}
				delete(m.visible[d], n)
				m.visible[d2][n2] = cur
			case op == 6 && cur != nil: // unlink
				log = append(log, fmt.Sprintf("unlink %s/%s", d, n))
				if err := os.Remove(path(d, n)); err != nil {
					fail("%v", err)
				}
				delete(m.visible[d], n)
			}
		}
		if got, want := tree(t, f.Dir()), m.expected(); !equalTrees(got, want) {
			fail("before cut %d the tree differs from what was written:\n%s", round+1, diffTrees(got, want))
		}
		log = append(log, "cut")
		if err := f.Cut(); err != nil {
			fail("%v", err)
		}
		m.cut()
		if got, want := tree(t, f.Dir()), m.expected(); !equalTrees(got, want) {
			fail("after cut %d the tree differs from the model's:\n%s", round+1, diffTrees(got, want))
		}
	}
}

func closeErr(fd *os.File, err error) error {
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	return err
}

func equalTrees(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diffTrees(got, want map[string]string) string {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var b strings.Builder
	for _, k := range sorted {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "  %s: missing, want %d bytes\n", k, len(w))
		case !wok:
			fmt.Fprintf(&b, "  %s: %d bytes, want none\n", k, len(g))
		case g != w:
			fmt.Fprintf(&b, "  %s: %d bytes, want %d bytes (contents differ)\n", k, len(g), len(w))
		}
	}
	return b.String()
}

// TestEmptyFileOnExt4 is the case of issue 32: a file written and
// renamed into place without an fsync, then an fsync of another file: on
// ext4 that fsync makes every name durable, so plan.json survives a cut
// with its name and without its data (0 bytes); on POSIX no directory was
// fsynced, so no name survives.
func TestEmptyFileOnExt4(t *testing.T) {
	for _, tc := range []struct {
		model Model
		want  map[string]string
	}{
		{POSIX, map[string]string{}},
		{Ext4, map[string]string{"other": "synced", "plan.json": ""}},
	} {
		t.Run(tc.model.String(), func(t *testing.T) {
			f := mountFS(t, tc.model, nil)
			if err := os.WriteFile(filepath.Join(f.Dir(), ".plan.tmp"), []byte(`{"ok": true}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(f.Dir(), ".plan.tmp"), filepath.Join(f.Dir(), "plan.json")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.Dir(), "other"), []byte("synced"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := syncPath(filepath.Join(f.Dir(), "other")); err != nil {
				t.Fatal(err)
			}
			if err := f.Cut(); err != nil {
				t.Fatal(err)
			}
			if got := tree(t, f.Dir()); !equalTrees(got, tc.want) {
				t.Errorf("after the cut:\n%s", diffTrees(got, tc.want))
			}
		})
	}
}

// sqliteHelperEnv names the database the helper process works on; the
// helper is this test binary, run as TestSQLiteHelper. SQLite is never
// opened on the filesystem by the process that serves it: its shared
// memory is a mapping of a file of the filesystem, and a page fault on it
// could wait for a server that cannot run while the runtime stops the
// world.
const sqliteHelperEnv = "POWERCUT_SQLITE_HELPER"

// TestSQLiteHelper is not a test: run by TestSQLiteAcrossACut as a child
// process, it does one thing to a SQLite database in WAL mode, as
// POWERCUT_SQLITE_DO says: "create" its table; "commit" 40 transactions
// at the synchronous level POWERCUT_SQLITE_SYNC, saying so after each,
// then wait to be killed; "count" check the database and print its rows.
func TestSQLiteHelper(t *testing.T) {
	path := os.Getenv(sqliteHelperEnv)
	if path == "" {
		return
	}
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	sync := os.Getenv("POWERCUT_SQLITE_SYNC")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous("+sync+")&_pragma=busy_timeout(5000)")
	if err != nil {
		fail(err)
	}
	db.SetMaxOpenConns(1)
	switch os.Getenv("POWERCUT_SQLITE_DO") {
	case "create":
		if _, err := db.Exec("CREATE TABLE t (i INTEGER)"); err != nil {
			fail(err)
		}
		if err := db.Close(); err != nil {
			fail(err)
		}
		fmt.Println("done")
	case "commit":
		for i := 1; i <= 40; i++ {
			if _, err := db.Exec("INSERT INTO t (i) VALUES (?)", i); err != nil {
				fail(err)
			}
			fmt.Println("committed", i)
		}
		fmt.Println("done")
		select {} // until killed: the database is never closed (a close checkpoints)
	case "count":
		var check string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil {
			fail(err)
		}
		var rows int
		if err := db.QueryRow("SELECT count(*) FROM t").Scan(&rows); err != nil {
			fail(err)
		}
		fmt.Println("integrity", check)
		fmt.Println("rows", rows)
		fmt.Println("done")
		os.Exit(0)
	}
}

// TestSQLiteAcrossACut commits 40 transactions to a SQLite database in
// WAL mode on the filesystem from a process that is then killed, cuts
// the power and opens the database again: at synchronous=FULL every
// committed transaction is there, at NORMAL (no fsync at commit) some are
// lost, on both models; the database is sound either way.
func TestSQLiteAcrossACut(t *testing.T) {
	for _, model := range []Model{POSIX, Ext4} {
		for _, sync := range []string{"FULL", "NORMAL"} {
			t.Run(model.String()+"/"+sync, func(t *testing.T) {
				f := mountFS(t, model, nil)
				path := filepath.Join(f.Dir(), "state.db")
				// The table is created, and made durable, first.
				sqliteHelper(t, path, "create", "FULL")
				committed := sqliteHelper(t, path, "commit", sync)["committed"]
				if err := f.Cut(); err != nil {
					t.Fatal(err)
				}
				got := sqliteHelper(t, path, "count", "FULL")
				if got["integrity ok"] != 1 {
					t.Fatalf("integrity_check after the cut is not ok: %v", got)
				}
				rows := got["rows"]
				t.Logf("%d of %d committed transactions survived the cut", rows, committed)
				switch {
				case committed != 40:
					t.Errorf("the helper committed %d transactions, want 40", committed)
				case sync == "FULL" && rows != committed:
					t.Errorf("at synchronous=FULL %d of %d committed transactions survived the cut, want all", rows, committed)
				case sync == "NORMAL" && rows >= committed:
					t.Errorf("at synchronous=NORMAL all %d committed transactions survived the cut: the filesystem kept what was never fsynced", committed)
				}
			})
		}
	}
}

// sqliteHelper runs TestSQLiteHelper on the database until it says done,
// kills it, and returns what it said: the last number after each word
// ("committed", "rows"), and 1 for "integrity ok".
func sqliteHelper(t *testing.T, path, do, sync string) map[string]int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), sqliteHelperEnv+"="+path, "POWERCUT_SQLITE_DO="+do, "POWERCUT_SQLITE_SYNC="+sync)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := map[string]int{}
	done := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "done" {
			done = true
			break
		}
		if strings.HasPrefix(line, "error") {
			t.Errorf("helper (%s): %s", do, line)
			break
		}
		word, n, _ := strings.Cut(line, " ")
		if v, err := strconv.Atoi(n); err == nil {
			said[word] = v
		} else {
			said[line] = 1
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !done {
		t.Fatalf("the helper (%s) did not finish: %v", do, said)
	}
	return said
}
