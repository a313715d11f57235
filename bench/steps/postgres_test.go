package steps

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// cluster is a throwaway PostgreSQL server on loopback, started the way
// the product's internal/pgtest starts one (initdb in a temporary
// directory, postgres as a child with a parent-death signal, run as the
// postgres user when we are root) but durable as a production server is:
// fsync, synchronous_commit and full_page_writes keep their defaults (on),
// since what is measured is the cost of durability.
type cluster struct {
	root   string
	port   int
	server *exec.Cmd
	exited chan struct{}
	admin  *sql.DB

	mu     sync.Mutex
	nextDB int
}

// sharedCluster starts one cluster for every PostgreSQL benchmark of this
// test binary, on first use; TestMain stops it.
var sharedCluster = &shared[*cluster]{
	make: func() (*cluster, error) { return startCluster(context.Background()) },
	free: (*cluster).stop,
}

// postgres returns the shared cluster, failing b when it cannot start.
func postgres(b testing.TB) *cluster {
	c, err := sharedCluster.get()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func startCluster(ctx context.Context) (*cluster, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "bench-steps-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{root: root}
	cred, err := postgresUser(root)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(root))
	}
	data := filepath.Join(root, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "--pgdata="+data, "--username=postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions")
	initdb.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, errors.Join(fmt.Errorf("initdb: %w\n%s", err, out), os.RemoveAll(root))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(root))
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.server = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+root,
		"-c", "lc_messages=C", "-c", "max_connections=200", "-c", "shared_buffers=64MB")
	c.server.Env = initdb.Env
	c.server.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	logs, err := c.server.StderrPipe()
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(root))
	}
	if err := c.server.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("start postgres: %w", err), os.RemoveAll(root))
	}
	ready := make(chan struct{})
	var tail []string
	var tailMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(logs)
		signalled := false
		for sc.Scan() {
			tailMu.Lock()
			tail = append(tail, sc.Text())
			if len(tail) > 20 {
				tail = tail[1:]
			}
			tailMu.Unlock()
			if !signalled && strings.Contains(sc.Text(), "ready to accept connections") {
				signalled = true
				close(ready)
			}
		}
	}()
	c.exited = make(chan struct{})
	go func() {
		_ = c.server.Wait()
		close(c.exited)
	}()
	select {
	case <-ready:
	case <-c.exited:
		tailMu.Lock()
		defer tailMu.Unlock()
		return nil, errors.Join(fmt.Errorf("postgres exited at start:\n%s", strings.Join(tail, "\n")), os.RemoveAll(root))
	case <-time.After(time.Minute):
		c.stop()
		return nil, errors.New("postgres did not accept connections within a minute")
	}
	if c.admin, err = sql.Open("pgx", c.url("postgres")); err == nil {
		err = c.admin.PingContext(ctx)
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return c, nil
}

// postgresBin finds the directory of initdb and postgres: through PATH
// (symbolic links resolved), else Debian's newest /usr/lib/postgresql/N/bin.
func postgresBin() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versions, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(versions[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(versions[j])))
		return vi > vj
	})
	for _, d := range append(dirs, versions...) {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server programs not found (Debian: apt-get install -y postgresql)")
}

// postgresUser returns the credential to run the server with: none when
// we are not root, else the postgres user's, who is handed dir.
func postgresUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and PostgreSQL refuses to: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// url is the address of database name over loopback TCP.
func (c *cluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// database creates an empty database of its own and returns its URL and
// name; it is dropped when b ends.
func (c *cluster) database(b testing.TB) (dbURL, name string) {
	c.mu.Lock()
	c.nextDB++
	name = fmt.Sprintf("bench_%d", c.nextDB)
	c.mu.Unlock()
	if _, err := c.admin.Exec("CREATE DATABASE " + name + " TEMPLATE template0"); err != nil {
		b.Fatalf("create database %s: %v", name, err)
	}
	b.Cleanup(func() {
		if _, err := c.admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			b.Errorf("drop database %s: %v", name, err)
		}
	})
	return c.url(name), name
}

// commits returns how many transactions database name committed so far,
// once no other session is connected to it, so that the statistics of
// every session that used it are flushed.
func (c *cluster) commits(b testing.TB, name string) int64 {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var others int
		if err := c.admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&others); err != nil {
			b.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("sessions still connected to %s after 30s", name)
		}
		time.Sleep(10 * time.Millisecond) // sessions end on their own: nothing to wait on but the catalog
	}
	// A backend flushes its statistics as it exits; force our own view fresh.
	var n int64
	if err := c.admin.QueryRow(`SELECT pg_stat_clear_snapshot() IS NULL, xact_commit FROM pg_stat_database WHERE datname = $1`, name).Scan(new(bool), &n); err != nil {
		b.Fatal(err)
	}
	return n
}

// stop stops the server at once and removes its directory.
func (c *cluster) stop() {
	if c.admin != nil {
		c.admin.Close()
	}
	if c.server != nil && c.server.Process != nil {
		_ = c.server.Process.Signal(syscall.SIGQUIT)
		<-c.exited
	}
	os.RemoveAll(c.root)
}
