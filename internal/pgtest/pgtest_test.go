package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

var pg Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func connect(t *testing.T, dbURL string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Each test gets a database of its own: what one test writes, another does
// not see, and the database is gone after the test.
func TestNewDatabaseIsFreshAndPrivate(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("first", func(t *testing.T) {
		db := connect(t, pg.NewDatabase(t))
		if _, err := db.ExecContext(ctx, "CREATE TABLE t (x integer); INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("second", func(t *testing.T) {
		db := connect(t, pg.NewDatabase(t))
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("a new database has the table another test created")
		}
	})
	var left int
	err := connect(t, pg.Cluster(t).URL("postgres")).QueryRowContext(ctx,
		"SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&left)
	if err != nil {
		t.Fatal(err)
	}
	if name == "" || left != 0 {
		t.Errorf("database %q of the finished test still exists (%d)", name, left)
	}
}

// The server runs as an unprivileged user (as root, the postgres user) and
// listens on loopback and on a socket in the cluster's directory.
func TestServerSetup(t *testing.T) {
	ctx := context.Background()
	c := pg.Cluster(t)
	db := connect(t, c.URL("postgres"))
	var super bool
	var addrs, sockets string
	if err := db.QueryRowContext(ctx, "SELECT usesuper FROM pg_user WHERE usename = current_user").Scan(&super); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SHOW listen_addresses").Scan(&addrs); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SHOW unix_socket_directories").Scan(&sockets); err != nil {
		t.Fatal(err)
	}
	if !super || addrs != "127.0.0.1" || sockets != c.SocketDir() {
		t.Errorf("superuser %v, listen_addresses %q, sockets %q; want true, 127.0.0.1, %q", super, addrs, sockets, c.SocketDir())
	}
	if _, err := os.Stat(filepath.Join(c.SocketDir(), ".s.PGSQL."+strconv.Itoa(c.Port()))); err != nil {
		t.Errorf("no unix socket: %v", err)
	}
	fi, err := os.Stat(filepath.Join(c.SocketDir(), "data", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no owner in %T", fi.Sys())
	}
	if os.Geteuid() == 0 && st.Uid == 0 {
		t.Errorf("the data directory belongs to root: the server would refuse to start")
	}
}

// A cluster of its own, started and stopped: Stop leaves no server and no
// directory behind, and stopping twice is harmless.
func TestStartStop(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dbURL, _, err := c.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := connect(t, dbURL)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()
	root := c.SocketDir()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster's directory %s is still there (%v)", root, err)
	}
	select {
	case <-c.exited:
	default:
		t.Error("the server is still running after Stop")
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := connect(t, dbURL).PingContext(ctx); err == nil {
		t.Error("the stopped cluster still accepts connections")
	}
}

func TestFindBinaries(t *testing.T) {
	dir, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	if !hasAll(dir) {
		t.Fatalf("FindBinaries returned %s, which lacks one of %v", dir, binaries)
	}
	// A directory with only some of the programs is passed over, and
	// without any, the message says how to install them.
	partial := t.TempDir()
	if err := os.WriteFile(filepath.Join(partial, "initdb"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findIn([]string{partial, dir}); err != nil || got != dir {
		t.Errorf("findIn(partial, %s) = %q, %v; want %s", dir, got, err, dir)
	}
	if _, err := findIn([]string{partial}); err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Errorf("findIn without the programs: %v, want an error saying how to install them", err)
	}
	if got := versionOf("/usr/lib/postgresql/15/bin"); got != 15 {
		t.Errorf("versionOf = %d, want 15", got)
	}
}
