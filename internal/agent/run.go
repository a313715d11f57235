package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cadence-dev/cadence/internal/supervise"
)

// Errors returned by Run before any process starts.
var (
	ErrNoCommand           = errors.New("agent: empty argv")
	ErrUnsupportedProtocol = errors.New("agent: unsupported protocol")
	// ErrStart wraps every failure to start the program itself: not
	// found, not executable, not a program the system can run. It is the
	// workflow's mistake, not the agent's or its provider's.
	ErrStart = errors.New("the program could not be started")
)

// drainTimeout bounds how long Run waits for stdout and stderr to reach EOF
// after the agent's process group is gone. Only a descendant that escaped the
// group (setsid) can hold the pipes open that long; its output is abandoned.
const drainTimeout = 2 * time.Second

// Run starts the agent described by spec, supervises it until it exits or is
// stopped, and reports what happened. The error is non-nil only when the
// program could not be started (ErrStart: with a nil Result, or with the
// supervisor's when the supervisor could not start it) or spec.OnStart
// failed; every failure of the agent itself is described in the Result.
//
// Run returns only after the process has been reaped, the rest of its process
// group killed, and both output readers have finished, so no goroutine or
// child outlives the call.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	defer spec.Reserved.Discard() // unless runStandby used it
	spec = withDefaults(spec)
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, ErrNoCommand
	}
	if !knownProtocol(spec.Protocol) {
		return nil, fmt.Errorf("%w %q", ErrUnsupportedProtocol, spec.Protocol)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start agent %s: %w", spec.Argv[0], err)
	}
	path, err := resolveProgram(spec.Argv[0], spec.Dir, spec.Env)
	if err != nil {
		return nil, fmt.Errorf("%w: find program %q: %w", ErrStart, spec.Argv[0], err)
	}
	usageFile, err := withUsageFile(&spec)
	if err != nil {
		return nil, err
	}
	if usageFile != "" {
		defer os.RemoveAll(filepath.Dir(usageFile))
	}
	program := path
	args := spec.Argv
	if spec.Sandbox != nil {
		var writable []string
		if usageFile != "" {
			writable = append(writable, filepath.Dir(usageFile))
		}
		box, err := spec.Sandbox(program, writable...)
		if err == nil && len(box) == 0 {
			err = errors.New("the sandbox gave no command")
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		path, args = box[0], append(slices.Clip(box), append([]string{program}, spec.Argv[1:]...)...)
	}
	p, err := openPipes(spec.Stdin != nil)
	if err != nil {
		return nil, err
	}
	if spec.Supervisor != "" && spec.Spares != nil {
		return runStandby(ctx, spec, p, program, path, args, usageFile)
	}
	attr := sysProcAttr()
	if spec.Supervisor != "" {
		path, args = supervised(spec.Supervisor, path, args)
		attr = supervisorProcAttr()
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        args,
		Env:         spec.Env,
		Dir:         spec.Dir,
		Stdout:      p.outW,
		Stderr:      p.errW,
		SysProcAttr: attr,
	}
	if p.inR != nil {
		cmd.Stdin = p.inR
	}
	// The gate the supervisor waits at before it starts the agent: a pipe
	// whose write end only this process holds. One byte opens it; its
	// closing without one (cadence gone, or OnStart failed) makes the
	// supervisor exit without starting the agent.
	var gate *os.File
	if spec.Supervisor != "" {
		gateR, gateW, err := os.Pipe()
		if err != nil {
			p.closeAll()
			return nil, fmt.Errorf("start agent %s: %w", spec.Argv[0], err)
		}
		cmd.ExtraFiles = []*os.File{gateR}
		cmd.Args = withGate(cmd.Args)
		defer gateR.Close()
		gate = gateW
		defer func() {
			if gate != nil {
				gate.Close()
			}
		}()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("%w: %s", ErrStart, startProblem(program, err))
	}
	p.closeChildEnds()
	if len(cmd.ExtraFiles) > 0 {
		cmd.ExtraFiles[0].Close()
	}
	return runStarted(ctx, spec, p, program, usageFile, waitCmd(cmd), start, func() {
		if gate != nil {
			// A supervisor that died already (killed with its group)
			// cannot read it: the write then fails, and the wait below
			// sees the end.
			_, _ = gate.Write([]byte{1})
			gate.Close()
			gate = nil
		}
	})
}

// runStandby is Run under a standby supervisor taken from spec.Spares:
// started already, it gets its program (path and args, in spec.Dir with
// spec.Env) and the program's standard descriptors once OnStart has
// recorded its pid, which is its start gate.
func runStandby(ctx context.Context, spec Spec, p *pipes, program, path string, args []string, usageFile string) (*Result, error) {
	order, err := orderOf(path, args, spec.Env, spec.Dir)
	if err != nil {
		p.closeAll()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	var sb *standby
	if spec.Reserved != nil && spec.Reserved.sb != nil {
		sb = spec.Reserved.use()
	} else if sb, err = spec.Spares.take(ctx); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("start agent %s: %w", spec.Argv[0], err)
	}
	stdin := p.inR
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			p.closeAll()
			sb.discard() // its ready byte is read: it cannot be taken again
			return nil, fmt.Errorf("start agent %s: %w", spec.Argv[0], err)
		}
		defer stdin.Close()
	}
	proc := sb.wait()
	res, err := runStarted(ctx, spec, p, program, usageFile, proc, time.Now(), func() {
		// A supervisor that died already cannot take its order: the send
		// fails, and the wait sees the end.
		_ = sb.send(order, stdin, p.outW, p.errW)
		p.closeChildEnds()
	})
	if proc.kept && res != nil && res.Stop == StopNone {
		// It reported the program's end and killed all the program
		// started; nothing was signalled that could reach it late.
		spec.Spares.put(sb)
	} else {
		sb.discard()
	}
	return res, err
}

// process is a started process as runStarted supervises it: the agent,
// or its supervisor.
type process struct {
	pid  int
	done chan struct{} // closed once it has ended; then the fields below are set
	// code is its exit code, -1 when a signal ended it (sig).
	code int
	sig  syscall.Signal
	// kept: a supervisor that reported its program's end and waits for
	// another order, everything its program started killed and reaped:
	// its process group holds itself alone, and must not be killed.
	kept bool
	// reused: a supervisor that served an attempt before this one.
	reused bool
}

// waitCmd returns the started cmd as runStarted supervises it.
func waitCmd(cmd *exec.Cmd) *process {
	p := &process{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = cmd.Wait() // the outcome is read from cmd.ProcessState
		p.fromState(cmd.ProcessState)
	}()
	return p
}

// setStatus sets how the process ended from its wait status.
func (p *process) setStatus(ws syscall.WaitStatus) {
	p.code = -1
	switch {
	case ws.Exited():
		p.code = ws.ExitStatus()
	case ws.Signaled():
		p.sig = ws.Signal()
	}
}

// fromState sets how the process ended from what Wait returned; nil (a
// process never waited for) leaves an exit code of -1.
func (p *process) fromState(ps *os.ProcessState) {
	p.code = -1
	if ps == nil {
		return
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		p.setStatus(ws)
		return
	}
	p.code = ps.ExitCode()
}

// runStarted supervises the started process proc (the agent's
// supervisor, or the agent) to its end: it records its pid (OnStart),
// lets it run (open), and reports how it ended.
func runStarted(ctx context.Context, spec Spec, p *pipes, program, usageFile string, proc *process, start time.Time, open func()) (*Result, error) {
	pid := proc.pid
	s := newSession(spec, p)
	s.startIO()

	if spec.OnStart != nil {
		if err := spec.OnStart(pid); err != nil {
			_ = signalGroup(pid, syscall.SIGKILL)
			p.closeChildEnds() // a standby supervisor never got them
			<-proc.done
			s.finishIO(pid, false)
			return nil, fmt.Errorf("agent pid %d started: %w", pid, err)
		}
	}
	open()
	if spec.OnRunning != nil {
		spec.OnRunning()
	}

	stop := s.supervise(ctx, proc)
	s.finishIO(pid, proc.kept)
	if stop == StopNone && s.overflow {
		// The agent exited before the stop took effect; its output was
		// still too large.
		stop = StopTooLarge
	}

	res := s.result()
	if usageFile != "" {
		prior := [3]int64{spec.PriorInputTokens, spec.PriorCachedTokens, spec.PriorOutputTokens}
		if err := readCopilotUsage(usageFile, res, prior); err != nil {
			slog.Warn("agent usage not read", "agent", spec.Argv[0], "err", err)
		}
	}
	res.PID = pid
	res.Stop = stop
	res.NoOutputSinceStart = stop == StopStuck && s.silentStart
	res.Elapsed = time.Since(start)
	res.ExitCode, res.Signal = proc.code, proc.sig
	if spec.Supervisor != "" && res.ExitCode == supervise.StartFailed {
		// The supervisor could not start the program (a script whose
		// interpreter is missing, a file the system cannot run): the
		// same mistake as when this process cannot start it.
		if msg, ok := superviseStartError(res.StderrTail); ok {
			return res, fmt.Errorf("%w: %s%s", ErrStart, msg, interpreterHint(program, msg))
		}
	}
	return res, nil
}

// startProblem says why program could not be started: the path and the
// system's reason, without exec's "fork/exec" wording.
func startProblem(program string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg := pe.Path + ": " + pe.Err.Error()
		return msg + interpreterHint(program, msg)
	}
	return err.Error()
}

// interpreterHint explains the one start failure whose message misleads:
// a program that exists but "does not exist" is a script whose #! line
// names an interpreter that does not.
func interpreterHint(path, msg string) string {
	if !strings.HasSuffix(msg, syscall.ENOENT.Error()) {
		return ""
	}
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return " (the file exists: the interpreter its #! line names does not)"
}

// withUsageFile makes the temporary directory of spec's usage file and
// appends the option that names the file to spec.Argv; it returns the
// file's path, "" when spec asks for none.
func withUsageFile(spec *Spec) (string, error) {
	if spec.UsageFileFlag == "" {
		return "", nil
	}
	dir, err := os.MkdirTemp("", "cadence-usage-")
	if err != nil {
		return "", fmt.Errorf("start agent %s: usage file: %w", spec.Argv[0], err)
	}
	file := filepath.Join(dir, "usage.json")
	spec.Argv = append(slices.Clone(spec.Argv), spec.UsageFileFlag+"="+file)
	return file, nil
}

// knownProtocol reports whether Run can read p.
func knownProtocol(p Protocol) bool {
	switch p {
	case ProtocolText, ProtocolClaudeStream, ProtocolCodexJSONL, ProtocolGeminiStream, ProtocolQwenStream, ProtocolOpencodeJSON, ProtocolPiJSON, ProtocolCopilotJSON, ProtocolNone:
		return true
	}
	return false
}

func withDefaults(spec Spec) Spec {
	if spec.Protocol == "" {
		spec.Protocol = ProtocolText
	}
	if spec.MaxBytes <= 0 {
		spec.MaxBytes = DefaultMaxBytes
	}
	if spec.MaxEventBytes <= 0 {
		spec.MaxEventBytes = DefaultMaxEventBytes
	}
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	if spec.ExitGrace <= 0 {
		spec.ExitGrace = DefaultExitGrace
	}
	if spec.HelpMarker == "" {
		spec.HelpMarker = DefaultHelpMarker
	}
	return spec
}

// resolveProgram finds argv[0]: a name with a slash is taken relative to dir
// (the project); a bare name is searched in the PATH of the child's
// environment, or cadence's own when env sets none.
func resolveProgram(name, dir string, env []string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) {
		if !filepath.IsAbs(name) && dir != "" {
			name = filepath.Join(dir, name)
		}
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		return exec.LookPath(abs)
	}
	path, ok := envPath(env)
	if !ok {
		return exec.LookPath(name)
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative PATH entry would depend on the working directory
		}
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w in the agent's PATH", exec.ErrNotFound)
}

// envPath returns the last PATH setting of env.
func envPath(env []string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return v, true
		}
	}
	return "", false
}

// supervise waits for the process to exit, stopping it on context end,
// timeout, silence or oversized output. It returns the first stop reason.
func (s *session) supervise(ctx context.Context, proc *process) StopReason {
	pid, waitDone := proc.pid, proc.done
	var timeoutC, idleC, killC, startC <-chan time.Time
	if s.spec.Timeout > 0 {
		t := time.NewTimer(s.spec.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	if s.spec.StartTimeout > 0 {
		t := time.NewTimer(s.spec.StartTimeout)
		defer t.Stop()
		startC = t.C
	}
	var idle *time.Timer
	var cpu *groupCPU
	var cpuC <-chan time.Time
	if s.spec.IdleTimeout > 0 {
		idle = time.NewTimer(s.spec.IdleTimeout)
		defer idle.Stop()
		idleC = idle.C
		if cpuAware {
			every := cpuSampleInterval(s.spec.IdleTimeout)
			tick := time.NewTicker(every)
			defer tick.Stop()
			cpuC = tick.C
			// No baseline sample: the processes have just started, and the
			// first tick counts what each used since its start. A walk of
			// /proc here would cost every attempt, however short.
			cpu = newGroupCPU(pid)
			if proc.reused {
				// What the supervisor and the programs it reaped used
				// before this attempt is not this attempt's work.
				cpu.since(pid)
			}
		}
	}
	var kill, exit *time.Timer
	var exitC <-chan time.Time
	defer func() {
		if kill != nil {
			kill.Stop()
		}
		if exit != nil {
			exit.Stop()
		}
	}()

	stop := StopNone
	askedSupervisor := false
	terminate := func(reason StopReason) {
		if stop != StopNone {
			return
		}
		stop = reason
		timeoutC, idleC, cpuC, startC = nil, nil, nil, nil
		_ = signalGroup(pid, syscall.SIGTERM)
		kill = time.NewTimer(s.spec.Grace)
		killC = kill.C
	}
	ctxDone := ctx.Done()
	for {
		select {
		case <-waitDone:
			return stop
		case <-ctxDone:
			ctxDone = nil
			terminate(StopInterrupted)
		case <-timeoutC:
			terminate(StopTimeout)
		case <-idleC:
			terminate(StopStuck)
		case <-startC:
			startC = nil
			// Output that arrived as the timer fired counts: the
			// readers mark it before they signal activity.
			if !s.sawOutput.Load() {
				s.silentStart = true
				terminate(StopStuck)
			}
		case <-s.tooLarge:
			terminate(StopTooLarge)
		case <-s.answered:
			// The answer is in: the agent has ExitGrace to exit, and is
			// neither timed out nor stuck meanwhile.
			if stop == StopNone {
				timeoutC, idleC, cpuC, startC = nil, nil, nil, nil
				exit = time.NewTimer(s.spec.ExitGrace)
				exitC = exit.C
			}
		case <-exitC:
			exitC = nil
			terminate(StopLingered)
		case <-s.activity:
			startC = nil
			if idle != nil && stop == StopNone {
				idle.Reset(s.spec.IdleTimeout)
			}
		case <-cpuC:
			// Silent but working (a build, a test suite run by the agent's
			// tool) is not stuck.
			if busy(cpu.sample(), cpuSampleInterval(s.spec.IdleTimeout)) {
				idle.Reset(s.spec.IdleTimeout)
			}
		case <-killC:
			killC = nil
			if s.spec.Supervisor != "" && !askedSupervisor {
				// A SIGKILL of the group would kill the supervisor too,
				// before it could kill the descendants that left the
				// group. Asked first, it kills them all, then the group;
				// the SIGKILL follows only if it does not.
				askedSupervisor = true
				_ = syscall.Kill(pid, syscall.SIGUSR1)
				kill.Reset(supervise.KillBound + time.Second)
				killC = kill.C
				continue
			}
			_ = signalGroup(pid, syscall.SIGKILL)
		}
	}
}

// cpuSampleInterval is how often idle detection samples the CPU use of the
// agent's processes: a tenth of the idle timeout, within [100ms, 5s].
func cpuSampleInterval(idle time.Duration) time.Duration {
	return min(max(idle/10, 100*time.Millisecond), 5*time.Second)
}

// busy reports whether CPU time used during a sample interval shows work:
// at least one clock tick and 2% of one core. A process blocked on a socket
// or a timer (a wedged agent, a sleeping tool) uses less; a build, a test
// suite or an agent parsing a model's answer uses far more.
func busy(used, interval time.Duration) bool {
	return used > 0 && used >= interval/50
}
