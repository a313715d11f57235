// Package early turns the cadence binary into the agent supervisor
// (`cadence agent supervise …`, see package supervise) before the rest of
// the binary is initialised.
//
// The supervisor is started once per attempt. Started as an ordinary
// cadence command, it first ran the initialisation of every package linked
// into cadence (a JSON Schema library compiling its metaschemas, CEL's
// standard library, protobuf descriptors, SQLite, …): about 20 ms per
// attempt, where the supervisor's own work is a fork, an exec and a wait.
// Go initialises a package as soon as the packages it imports are, and this
// one imports only package supervise, which imports only light packages of
// the standard library, so its init runs before the heavy ones and, for
// the supervisor, never returns. BENCHMARKS.md has the figures.
//
// Only cmd/cadence imports it, for its side effect.
package early

import (
	"os"

	"github.com/cadence-dev/cadence/internal/supervise"
)

func init() {
	if len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "supervise" {
		os.Exit(supervise.Main(os.Args[3:], os.Stderr))
	}
}
