package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; a
// binary built by go install reports its module version instead.
var version = "dev"

type versionCmd struct{}

func (c *versionCmd) Run(e *env) error {
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
	fmt.Fprintf(e.stdout, "cadence %s\n", v)
	if rev != "" {
		if modified {
			rev += " (modified)"
		}
		fmt.Fprintf(e.stdout, "commit %s\n", rev)
	}
	fmt.Fprintf(e.stdout, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
