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

// Spares keeps supervisors started ahead of the attempts they will serve
// (`cadence agent supervise --standby`): an attempt takes one that is
// ready, and one is started for the next attempt when none is left, so
// that a supervisor's start (an exec of the cadence binary and its
// runtime's initialisation) runs beside an attempt instead of between
// two. A supervisor whose program ended by itself, with everything it
// started killed and reaped, goes back to the spares and serves a later
// attempt: an attempt then costs the start of its program alone. One
// that is waiting exits when its control socket closes (Close, or
// cadence's end) and with cadence's death (the parent-death signal): it
// runs nothing then, so nothing outlives cadence (G6). A Spares is used
// by many goroutines at once. The zero value is not usable; see
// NewSpares.
type Spares struct {
	self string // the cadence binary

	mu       sync.Mutex
	idle     []*standby // waiting for an order, the last one used last; perhaps still initialising
	starting bool       // one is being started for idle
	closed   bool
	wg       sync.WaitGroup
}

// maxIdle bounds the supervisors kept waiting: as many as attempts ran
// at once, up to this many.
const maxIdle = 16

// NewSpares returns the spares of supervisors of the cadence binary self.
func NewSpares(self string) *Spares { return &Spares{self: self} }

// standby is a started standby supervisor and cadence's end of its
// control socket.
type standby struct {
	cmd    *exec.Cmd
	ctl    *os.File
	exited chan struct{} // closed once the process is reaped
	served int           // orders it was sent
	// primed: its ready byte was read and it got no order since (a
	// reservation given back), so it is ready without another byte.
	primed bool
}

// take returns a standby supervisor that is ready for its order: the one
// used last among those waiting, or a new one when none is left alive,
// and starts one for the next attempt when none is left.
func (s *Spares) take(ctx context.Context) (*standby, error) {
	for {
		s.mu.Lock()
		var sb *standby
		if n := len(s.idle); n > 0 {
			sb = s.idle[n-1]
			s.idle = s.idle[:n-1]
		}
		s.mu.Unlock()
		if sb == nil {
			break
		}
		if sb.primed && !sb.gone() {
			sb.primed = false
			s.refill()
			return sb, nil
		}
		if err := sb.awaitReady(ctx); err == nil {
			s.refill()
			return sb, nil
		} else if ctx.Err() != nil {
			sb.discard()
			return nil, err
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

// Reserved is a standby supervisor taken for one attempt ahead of its
// start, so that the commit of the attempt's row can name the process its
// program will run under (G1) and no commit of a pid needs to follow. It
// is used by handing it to Run (Spec.Reserved), given back unused
// (Release) or ended (Discard); Run ends one it did not use.
type Reserved struct {
	s  *Spares
	sb *standby // nil once used, given back or ended
}

// Reserve takes a ready supervisor, as an attempt's Run would, for the
// attempt about to be committed.
func (s *Spares) Reserve(ctx context.Context) (*Reserved, error) {
	sb, err := s.take(ctx)
	if err != nil {
		return nil, err
	}
	return &Reserved{s: s, sb: sb}, nil
}

// PID is the supervisor's pid: the pid Spec.OnStart is called with when
// Run uses the reservation, and the process group G6 kills.
func (r *Reserved) PID() int { return r.sb.cmd.Process.Pid }

// Release gives back a reservation that no attempt's row names: the
// supervisor, sent no order, waits for the next attempt's. It does
// nothing once the reservation was used or ended.
func (r *Reserved) Release() {
	if r == nil || r.sb == nil {
		return
	}
	sb := r.sb
	r.sb = nil
	sb.primed = true
	r.s.put(sb)
}

// Discard ends the reserved supervisor, which runs nothing. It does
// nothing once the reservation was used or given back.
func (r *Reserved) Discard() {
	if r == nil || r.sb == nil {
		return
	}
	r.sb.discard()
	r.sb = nil
}

// use hands the reserved supervisor to Run, once.
func (r *Reserved) use() *standby {
	sb := r.sb
	r.sb = nil
	return sb
}

// Prestart starts a supervisor in the background for the first attempt,
// before it is known: one whose start would otherwise be the first
// attempt's wait.
func (s *Spares) Prestart() { s.refill() }

// refill starts a standby supervisor in the background, unless one is
// waiting or being started already.
func (s *Spares) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.idle) > 0 || s.starting {
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
		s.mu.Unlock()
		s.put(sb)
	}()
}

// put keeps sb, a supervisor waiting for an order, for a later attempt;
// it ends it when the spares are closed or hold maxIdle already.
func (s *Spares) put(sb *standby) {
	s.mu.Lock()
	keep := !s.closed && len(s.idle) < maxIdle
	if keep {
		s.idle = append(s.idle, sb)
	}
	s.mu.Unlock()
	if !keep {
		sb.discard()
	}
}

// Close ends the supervisors waiting, which run nothing, and one being
// started, and returns once all are reaped.
func (s *Spares) Close() {
	s.mu.Lock()
	s.closed = true
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	for _, sb := range idle {
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
	sb := &standby{cmd: cmd, ctl: ctl, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // how it ended is read from cmd.ProcessState
		close(sb.exited)
	}()
	return sb, nil
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
// descriptors with it: the supervisor starts the program once it has read
// it all.
func (sb *standby) send(order []byte, stdin, stdout, stderr *os.File) error {
	sb.served++
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

// wait returns the process that the supervisor's order started, as
// runStarted supervises it: it ends when the supervisor reports the
// program's end, or when the supervisor itself ends first (killed with
// its group, or failed), with its own exit status then.
func (sb *standby) wait() *process {
	p := &process{pid: sb.cmd.Process.Pid, done: make(chan struct{}), reused: sb.served > 0}
	go func() {
		defer close(p.done)
		var b [supervise.EndLen]byte
		if _, err := io.ReadFull(sb.ctl, b[:]); err == nil {
			if ws, reusable, ok := supervise.DecodeEnd(b[:]); ok {
				p.setStatus(ws)
				p.kept = reusable
				return
			}
			// Not a report: a supervisor that cannot be understood
			// is ended with its group, never waited on.
			_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		}
		<-sb.exited
		p.fromState(sb.cmd.ProcessState)
	}()
	return p
}

// gone reports whether the supervisor has ended.
func (sb *standby) gone() bool {
	select {
	case <-sb.exited:
		return true
	default:
		return false
	}
}

// discard ends a supervisor that runs nothing (or whose program is to be
// killed with it), and reaps it.
func (sb *standby) discard() {
	sb.ctl.Close()
	_ = syscall.Kill(-sb.cmd.Process.Pid, syscall.SIGKILL)
	<-sb.exited
}

// orderOf is the order that runs path with argv (argv[0] as given) in dir
// with env, as exec.Cmd would run it: env nil is cadence's own, and the
// environment gets exec.Cmd's treatment (duplicates, PWD).
func orderOf(path string, argv, env []string, dir string) ([]byte, error) {
	c := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir}
	return supervise.EncodeOrder(dir, append([]string{path}, argv[1:]...), c.Environ())
}
