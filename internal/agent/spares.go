package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cadence-dev/cadence/internal/supervise"
)

// Spares keeps a supervisor started ahead of the attempt it will serve
// (`cadence agent supervise --standby`): an attempt takes the one ready,
// and a new one starts at once for the next attempt, so that the
// supervisor's own start (an exec of the cadence binary and its runtime's
// initialisation) runs beside an attempt instead of between two. One that
// was never given a program exits when its control socket closes (Close,
// or cadence's end) and with cadence's death (the parent-death signal): it
// has started nothing, so nothing outlives cadence (G6). A Spares is used
// by many goroutines at once. The zero value is not usable; see NewSpares.
type Spares struct {
	self string // the cadence binary

	mu       sync.Mutex
	next     *standby // started, perhaps still initialising
	starting bool     // a next one is being started
	closed   bool
	wg       sync.WaitGroup
}

// NewSpares returns the spares of supervisors of the cadence binary self.
func NewSpares(self string) *Spares { return &Spares{self: self} }

// standby is a started standby supervisor and cadence's end of its
// control socket.
type standby struct {
	cmd *exec.Cmd
	ctl *os.File
}

// take returns a standby supervisor that is ready for its order: the one
// kept, or a new one when there is none or it died, and starts the next.
func (s *Spares) take(ctx context.Context) (*standby, error) {
	s.mu.Lock()
	sb := s.next
	s.next = nil
	s.mu.Unlock()
	if sb != nil {
		if err := sb.awaitReady(ctx); err == nil {
			s.refill()
			return sb, nil
		}
		sb.discard()
	}
	sb, err := s.start()
	if err != nil {
		return nil, err
	}
	if err := sb.awaitReady(ctx); err != nil {
		sb.discard()
		return nil, err
	}
	s.refill()
	return sb, nil
}

// refill starts the next standby supervisor in the background, unless one
// is kept or being started already.
func (s *Spares) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.next != nil || s.starting {
		return
	}
	s.starting = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		sb, err := s.start()
		if err != nil {
			s.mu.Lock()
			s.starting = false
			s.mu.Unlock()
			return // the next attempt starts one itself, and reports why
		}
		s.mu.Lock()
		s.starting = false
		keep := !s.closed && s.next == nil
		if keep {
			s.next = sb
		}
		s.mu.Unlock()
		if !keep {
			sb.discard()
		}
	}()
}

// Close ends the kept supervisor, which never ran anything, and one being
// started, and returns once both are reaped.
func (s *Spares) Close() {
	s.mu.Lock()
	s.closed = true
	sb := s.next
	s.next = nil
	s.mu.Unlock()
	if sb != nil {
		sb.discard()
	}
	s.wg.Wait() // one being started finds the spares closed and ends it
}

// start starts a standby supervisor with the cadence side of its control
// socket.
func (s *Spares) start() (*standby, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("start a supervisor: control socket: %w", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, fmt.Errorf("start a supervisor: control socket: %w", err)
	}
	ctl := os.NewFile(uintptr(fds[0]), "supervisor control")
	child := os.NewFile(uintptr(fds[1]), "supervisor control")
	defer child.Close()
	cmd := &exec.Cmd{
		Path:        s.self,
		Args:        []string{s.self, "agent", "supervise", "--parent", strconv.Itoa(os.Getpid()), "--standby"},
		ExtraFiles:  []*os.File{child},
		SysProcAttr: supervisorProcAttr(),
	}
	if err := cmd.Start(); err != nil {
		ctl.Close()
		return nil, fmt.Errorf("%w: the supervisor %s: %w", ErrStart, s.self, err)
	}
	return &standby{cmd: cmd, ctl: ctl}, nil
}

// readyBound bounds the wait for a supervisor's ready byte: a binary that
// never becomes a supervisor (SelfExe not cadence) is an error, not a
// hang.
const readyBound = 30 * time.Second

// awaitReady waits for the supervisor's ready byte: an error when it died
// first, did not get ready within readyBound, or ctx ended.
func (sb *standby) awaitReady(ctx context.Context) error {
	if err := sb.ctl.SetReadDeadline(time.Now().Add(readyBound)); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = sb.ctl.SetReadDeadline(time.Now()) })
	defer stop()
	var b [1]byte
	if _, err := io.ReadFull(sb.ctl, b[:]); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the supervisor %s did not get ready: %w", sb.cmd.Path, err)
	}
	return sb.ctl.SetReadDeadline(time.Time{})
}

// send gives the supervisor its order, the program's three standard
// descriptors with it, and closes the socket: the supervisor starts the
// program once it has read it all.
func (sb *standby) send(order []byte, stdin, stdout, stderr *os.File) error {
	defer sb.ctl.Close()
	rc, err := sb.ctl.SyscallConn()
	if err != nil {
		return err
	}
	rights := syscall.UnixRights(int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	first := min(len(order), 4096)
	var sent int
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		sent, serr = syscall.SendmsgN(int(fd), order[:first], rights, nil, 0)
		return !errors.Is(serr, syscall.EAGAIN)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("send the supervisor its program: %w", serr)
	}
	if _, err := sb.ctl.Write(order[sent:]); err != nil {
		return fmt.Errorf("send the supervisor its program: %w", err)
	}
	return nil
}

// discard ends a supervisor that was given no program, and reaps it.
func (sb *standby) discard() {
	sb.ctl.Close()
	_ = syscall.Kill(-sb.cmd.Process.Pid, syscall.SIGKILL)
	_ = sb.cmd.Wait()
}

// orderOf is the order that runs path with argv (argv[0] as given) in dir
// with env, as exec.Cmd would run it: env nil is cadence's own, and the
// environment gets exec.Cmd's treatment (duplicates, PWD).
func orderOf(path string, argv, env []string, dir string) ([]byte, error) {
	c := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir}
	return supervise.EncodeOrder(dir, append([]string{path}, argv[1:]...), c.Environ())
}
