// Package pgtest starts a throwaway PostgreSQL cluster for the tests of one
// test binary: initdb in a temporary directory, a postgres server on a free
// loopback port (its unix socket in the same directory), a fresh database
// per test, and everything stopped and removed at the end.
//
// PostgreSQL refuses to run as root. When the tests run as root (as in CI),
// initdb and the server run as the "postgres" user that Debian's package
// creates, and the temporary directory is handed to that user.
//
// PostgreSQL is required, not optional: when its binaries are missing the
// tests fail and say how to install them (.ci/run does).
package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// Superuser is the name of the cluster's superuser; it connects without a
// password (trust authentication on loopback only).
const Superuser = "postgres"

// startTimeout bounds how long the server may take to accept connections.
const startTimeout = 60 * time.Second

// binaries are the programs of a PostgreSQL server installation.
var binaries = []string{"initdb", "pg_ctl", "postgres"}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	root   string // temporary directory holding everything below
	data   string // the data directory
	bin    string // directory of initdb, pg_ctl and postgres
	port   int
	cred   *syscall.Credential // the unprivileged user to run as, when we are root
	server *exec.Cmd
	exited chan struct{} // closed when the server process has exited
	log    *tailBuffer   // the end of the server's log, for error messages
	admin  *sql.DB       // a connection to the maintenance database

	mu      sync.Mutex
	nextDB  int
	stopped bool
}

// Start creates a cluster in a new temporary directory and starts its
// server. Call Stop to stop it and remove the directory.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, log: &tailBuffer{max: 16 << 10}}
	if c.root, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	c.data = filepath.Join(c.root, "data")
	if err := c.setOwner(); err != nil {
		return nil, errors.Join(err, os.RemoveAll(c.root))
	}
	if err := c.initdb(ctx); err != nil {
		return nil, errors.Join(err, os.RemoveAll(c.root))
	}
	// A free port can be taken by another process between choosing it and
	// the server binding it: try a few.
	for try := 1; ; try++ {
		err = c.startServer(ctx, 0)
		if err == nil || try == 3 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(c.root))
	}
	c.admin, err = sql.Open("pgx", c.URL("postgres"))
	if err == nil {
		err = c.admin.PingContext(ctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pgtest: connect to the new cluster: %w", err), c.Stop())
	}
	return c, nil
}

// FindBinaries returns the directory holding initdb, pg_ctl and postgres:
// the one initdb is found in through PATH (symbolic links resolved), else
// the newest /usr/lib/postgresql/VERSION/bin (Debian's layout, where only
// some programs are linked into PATH).
func FindBinaries() (string, error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(real))
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versions, func(i, j int) bool { return versionOf(versions[i]) > versionOf(versions[j]) })
	return findIn(append(candidates, versions...))
}

// findIn returns the first of dirs that holds every server program.
func findIn(dirs []string) (string, error) {
	for _, dir := range dirs {
		if hasAll(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("pgtest: PostgreSQL server programs (%s) not found in PATH or /usr/lib/postgresql/*/bin: "+
		"install the PostgreSQL server (Debian: apt-get install -y postgresql), as .ci/run does",
		strings.Join(binaries, ", "))
}

func hasAll(dir string) bool {
	for _, b := range binaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// versionOf reads the major version out of /usr/lib/postgresql/N/bin.
func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// setOwner arranges for the server to run unprivileged when we are root:
// it looks up the postgres user and hands it the temporary directory.
func (c *Cluster) setOwner() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("pgtest: running as root, and PostgreSQL refuses to: no \"postgres\" user to run it as (%w); "+
			"install the PostgreSQL server (Debian: apt-get install -y postgresql), which creates it", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return fmt.Errorf("pgtest: uid of user postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return fmt.Errorf("pgtest: gid of user postgres: %w", err)
	}
	if err := os.Chown(c.root, int(uid), int(gid)); err != nil {
		return fmt.Errorf("pgtest: hand %s to user postgres: %w", c.root, err)
	}
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}

// command prepares one of the cluster's programs, run as the unprivileged
// user when we are root.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.root
	// Messages in English whatever the machine's locale, so the readiness
	// line below is recognised.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// initdb creates the cluster. --no-sync and the C locale keep it fast;
// tests need neither durability against power cuts nor a language.
func (c *Cluster) initdb(ctx context.Context) error {
	cmd := c.command(ctx, "initdb", "--pgdata="+c.data, "--username="+Superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb in %s: %w\n%s", c.data, err, out)
	}
	return nil
}

// startServer runs postgres on loopback port port (a free one when 0)
// and waits until it accepts connections. The server is a child of this
// process with a parent-death signal (SIGQUIT, PostgreSQL's immediate
// shutdown), so a test binary that is killed leaves no server behind.
func (c *Cluster) startServer(ctx context.Context, port int) error {
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		port = p
	}
	cmd := c.command(context.WithoutCancel(ctx), "postgres", "-D", c.data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+c.root,
		"-c", "lc_messages=C",
		// A test cluster need not survive a power cut: no fsync.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB",
	)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	// A pipe of our own rather than StderrPipe: the server's log is read
	// to its end (every server process closed it), whenever Wait returns.
	logR, logW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	cmd.Stderr = logW
	err = cmd.Start()
	logW.Close()
	if err != nil {
		logR.Close()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c.port, c.server, c.exited = port, cmd, make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer logR.Close()
		c.readLog(logR, ready)
	}()
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return nil
	case <-c.exited:
		return fmt.Errorf("pgtest: postgres exited before accepting connections on port %d:\n%s", port, c.log)
	case <-timer.C:
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-c.exited
		return fmt.Errorf("pgtest: postgres did not accept connections within %v:\n%s", startTimeout, c.log)
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-c.exited
		return fmt.Errorf("pgtest: start postgres: %w", ctx.Err())
	}
}

// readLog keeps the end of the server's log and closes ready when the
// server says it accepts connections.
func (c *Cluster) readLog(r io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		c.log.WriteLine(line)
		if !signalled && strings.Contains(line, "database system is ready to accept connections") {
			signalled = true
			close(ready)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URL returns the address of database name on the cluster, over loopback
// TCP as the superuser.
func (c *Cluster) URL(name string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + name,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// SocketDir returns the directory of the server's unix socket.
func (c *Cluster) SocketDir() string { return c.root }

// Port returns the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// CreateDatabase creates a new, empty database with a name of its own and
// returns its URL and name. It is copied from template0, so nothing added
// to template1 leaks into it.
func (c *Cluster) CreateDatabase(ctx context.Context) (dbURL, name string, err error) {
	c.mu.Lock()
	c.nextDB++
	name = fmt.Sprintf("test_%d", c.nextDB)
	c.mu.Unlock()
	// The name is ours, made of letters, digits and '_': safe to splice.
	if _, err := c.admin.ExecContext(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return c.URL(name), name, nil
}

// DropDatabase drops a database made by CreateDatabase, closing the
// connections still open to it.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	if _, err := c.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: drop database %s: %w", name, err)
	}
	return nil
}

// Exec runs a statement on the maintenance database as the superuser.
func (c *Cluster) Exec(ctx context.Context, query string) error {
	if _, err := c.admin.ExecContext(ctx, query); err != nil {
		return fmt.Errorf("pgtest: %s: %w", query, err)
	}
	return nil
}

// Restart does what `pg_ctl restart` does: a fast shutdown (every session
// is ended, open transactions are rolled back) and a start, here on the
// same port, so the cluster's URLs stay valid. It returns once the server
// accepts connections again.
func (c *Cluster) Restart(ctx context.Context) error {
	cmd := c.command(ctx, "pg_ctl", "stop", "--pgdata="+c.data, "--mode=fast", "--wait")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, bytes.TrimSpace(out))
	}
	<-c.exited
	return c.startServer(ctx, c.port)
}

// Stop stops the server at once (pg_ctl stop -m immediate: no checkpoint,
// nothing here is kept) and removes the cluster's directory. Stopping
// twice does nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()
	var errs []error
	if c.admin != nil {
		errs = append(errs, c.admin.Close())
	}
	if c.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		cmd := c.command(ctx, "pg_ctl", "stop", "--pgdata="+c.data, "--mode=immediate", "--wait")
		if out, err := cmd.CombinedOutput(); err != nil {
			// Whatever pg_ctl says, make sure our child is gone.
			_ = c.server.Process.Signal(syscall.SIGQUIT)
			select {
			case <-c.exited:
			default:
				errs = append(errs, fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, bytes.TrimSpace(out)))
			}
		}
		<-c.exited
	}
	if err := os.RemoveAll(c.root); err != nil {
		errs = append(errs, fmt.Errorf("pgtest: remove the cluster: %w", err))
	}
	return errors.Join(errs...)
}

// quoteIdent quotes a PostgreSQL identifier.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// tailBuffer keeps the last max bytes of the lines written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// WriteLine appends one line.
func (b *tailBuffer) WriteLine(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, line...)
	b.buf = append(b.buf, '\n')
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
