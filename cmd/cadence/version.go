package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/alecthomas/kong"
)

// version and commit are set at build time by a release build
// (.goreleaser.yaml: -ldflags "-X main.version=v1.2.3 -X main.commit=SHA");
// a binary built by go install reports its module version, and the commit
// of a build from a checkout comes from Go's build info.
var (
	version = "dev"
	commit  = ""
)

type versionCmd struct{}

func (c *versionCmd) Run(e *env) error {
	printVersion(e.stdout)
	return nil
}

// versionFlag is --version: what `cadence version` prints, then exit 0.
type versionFlag bool

// BeforeReset prints the version as soon as the flag is seen, before any
// command's arguments are required.
func (versionFlag) BeforeReset(app *kong.Kong) error {
	printVersion(app.Stdout)
	app.Exit(0)
	return nil
}

// printVersion writes the version, the commit it was built from (when
// known) and the Go toolchain and platform.
func printVersion(w io.Writer) {
	v, rev, modified := version, "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if commit != "" {
		// A release build names its commit; it is built from a clean tag.
		rev, modified = commit, false
	}
	fmt.Fprintf(w, "cadence %s\n", v)
	if rev != "" {
		if modified {
			rev += " (modified)"
		}
		fmt.Fprintf(w, "commit %s\n", rev)
	}
	fmt.Fprintf(w, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
