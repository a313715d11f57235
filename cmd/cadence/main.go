// Command cadence runs workflows of coding-agent steps durably: it captures,
// repairs and validates each agent's JSON handoff, retries bad handoffs in the
// same agent session, and records every attempt in SQLite so that a run can be
// resumed exactly after any interruption.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
)

// Exit codes of every cadence command (SPEC §2).
const (
	exitOK          = 0
	exitFailed      = 1 // the run failed, or a handoff was rejected
	exitUsage       = 2 // usage, workflow or schema error; nothing executed
	exitInterrupted = 3 // interrupted, resumable
	exitLocked      = 4 // another cadence process holds the project lock
	exitAwaiting    = 5 // waiting for a person to answer an approval gate; resumable
)

// exitError carries the exit code a command wants alongside its error. A nil
// err with a code means the command already told the user what happened.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// env is what every command receives: its streams and a context cancelled on
// SIGINT or SIGTERM.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// process says the command is the whole process, whose garbage
	// collector it may set (loadGC); false when a test runs commands
	// in its own process.
	process bool
}

func main() {
	os.Exit(runProcess(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// runProcess is run as the whole process of a cadence command.
func runProcess(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(args, stdin, stdout, stderr, true)
}

// run parses args, runs the chosen command and returns the process exit
// code, leaving the process's settings alone (tests run commands in
// their own process with it).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(args, stdin, stdout, stderr, false)
}

// runEnv is run, for the whole process when process is set.
func runEnv(args []string, stdin io.Reader, stdout, stderr io.Writer, process bool) int {
	var cli CLI
	parser, err := kong.New(&cli,
		kong.Name("cadence"),
		kong.Description("Durable workflows of coding-agent steps with JSON handoffs that are repaired, validated and retried in the same agent session."),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, Summary: true}),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitPanic(code)) }),
	)
	if err != nil {
		fmt.Fprintf(stderr, "cadence: %v\n", err)
		return exitUsage
	}
	cmd, code, done := parseArgs(parser, helpArgs(args), stderr)
	if done {
		return code
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, process: process}
	if err := cmd.Run(e); err != nil {
		return report(stderr, err)
	}
	return exitOK
}

// helpArgs turns `cadence help [COMMAND...]` into `cadence [COMMAND...]
// --help`, and a bare `cadence` into `cadence --help`: the full list of
// commands.
func helpArgs(args []string) []string {
	switch {
	case len(args) == 0:
		return []string{"--help"}
	case args[0] == "help":
		return append(append([]string{}, args[1:]...), "--help")
	}
	return args
}

// exitPanic lets kong's --help and usage errors end parsing without calling
// os.Exit inside a library, so run stays testable.
type exitPanic int

// parseArgs runs kong's parser and turns its exits into codes. done reports
// that nothing is left to run (help was printed, or the arguments were bad).
func parseArgs(parser *kong.Kong, args []string, stderr io.Writer) (cmd runner, code int, done bool) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			cmd, code, done = nil, int(c), true
			if code != 0 {
				code = exitUsage
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "cadence: %v\n", err)
		if kctx != nil {
			_ = kctx.PrintUsage(true)
		}
		return nil, exitUsage, true
	}
	cmd, ok := kctx.Selected().Target.Addr().Interface().(runner)
	if !ok {
		fmt.Fprintf(stderr, "cadence: %s: not a command\n", kctx.Command())
		return nil, exitUsage, true
	}
	return cmd, 0, false
}

// report prints err (unless it is a bare exit code) and returns its code.
func report(stderr io.Writer, err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "cadence: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "cadence: %v\n", err)
	return exitFailed
}
