package main

// runner is implemented by every leaf command.
type runner interface {
	Run(e *env) error
}

// CLI is the command tree; each command lives in a file of its own.
type CLI struct {
	Version versionCmd `cmd:"" help:"Print version and build information."`
}
