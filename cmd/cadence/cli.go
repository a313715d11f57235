package main

import "time"

// runner is implemented by every leaf command.
type runner interface {
	Run(e *env) error
}

// CLI is the command tree; each command lives in a file of its own.
type CLI struct {
	Init          initCmd          `cmd:"" help:"Write a commented .cadence/workflow.yaml to start from."`
	Run           runCmd           `cmd:"" help:"Validate the workflow and start a new run."`
	Resume        resumeCmd        `cmd:"" help:"Continue the latest unfinished run exactly where it stopped."`
	Approve       approveCmd       `cmd:"" help:"Approve an approval gate a run waits at (any terminal, no lock), before its timeout; --resume continues the run."`
	Reject        rejectCmd        `cmd:"" help:"Reject an approval gate a run waits at, before its timeout, with --comment saying why."`
	Cancel        cancelCmd        `cmd:"" help:"End an unfinished run for good: it is never resumed; a process working on it stops its agents within a few seconds."`
	Gates         gatesCmd         `cmd:"" help:"List the approval gates waiting for a person in the project, with the command that answers each."`
	Check         checkCmd         `cmd:"" help:"Check a workflow without running it: every error in it, and programs that cannot be found."`
	Runs          runsCmd          `cmd:"" help:"List the runs of a project, newest first: id, status (waiting at a gate, stopped when no process holds it), workflow, start, duration, cost, tokens, failed step."`
	Inspect       inspectCmd       `cmd:"" help:"Show the history of a run: steps, attempts, diagnoses, circuits."`
	Output        outputCmd        `cmd:"" help:"Print a run's result, the last step's handoff data (or --step's), as JSON on stdout."`
	Diff          diffCmd          `cmd:"" help:"Print what an attempt changed in its work tree, as a git diff (from the snapshot before it to the one after)."`
	Validate      validateCmd      `cmd:"" help:"Extract, repair and validate a handoff against a JSON Schema."`
	Repair        repairCmd        `cmd:"" help:"Extract and repair the JSON in an agent's output."`
	Agent         agentCmd         `cmd:"" help:"Built-in agents."`
	Circuit       circuitCmd       `cmd:"" help:"Inspect or reset circuit breakers."`
	Dlq           dlqCmd           `cmd:"" name:"dlq" help:"The dead-letter queue of map items: list, show, retry."`
	Report        reportCmd        `cmd:"" help:"Write a self-contained HTML report of a run: timeline, failures, costs."`
	Prune         pruneCmd         `cmd:"" help:"Remove finished runs older than --older-than, with every row and file they own (never an unfinished run)."`
	CleanBranches cleanBranchesCmd `cmd:"" name:"clean-branches" help:"Delete the git branches a finished run's worktree map steps left (cadence/RUN/…)."`
	Worker        workerCmd        `cmd:"" help:"Run map items of the runs in a shared PostgreSQL state database, from this machine's checkout."`
	Version       versionCmd       `cmd:"" help:"Print version and build information."`

	VersionFlag versionFlag `name:"version" help:"Print version and build information, as cadence version does."`
}

// output holds the flags shared by the commands that show a run.
type output struct {
	JSON    bool `help:"Print events as JSON Lines on stdout instead of the human view."`
	Quiet   bool `short:"q" help:"Print only warnings, failures and the final result."`
	NoColor bool `help:"Never use colour or terminal control codes (NO_COLOR is honoured too)."`
}

// stateFlag is the --state flag of the commands that read or write a run's
// state (SPEC section 13).
type stateFlag struct {
	State string `env:"CADENCE_STATE" placeholder:"URL" help:"State database: a postgres:// URL shared by cadence processes on several machines, or the path of a SQLite file (default: DIR/.cadence/state.db). Projects sharing one see only their own runs (each is known by its .cadence/project)."`
}

// leaseFlag is the --lease-ttl flag of the commands that hold a run or its
// items on a shared database.
type leaseFlag struct {
	LeaseTTL time.Duration `name:"lease-ttl" default:"30s" help:"How long this process's hold on the run or an item lasts without renewal (renewed every third of it): with a postgres:// --state, a process that dies is taken over after this long; on SQLite, only one in another pid namespace (a container), the others being checked by pid."`
}
