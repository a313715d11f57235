package workflow

import (
	"embed"
	"io/fs"
)

//go:embed starter
var starter embed.FS

// Template returns the commented starter workflow that `cadence init`
// writes. It runs as is, with no API key: its agent is the simulated one,
// following the scenario StarterFiles provides. Every key of the format is
// explained, the ones it does not use in commented-out examples.
func Template() []byte {
	b, _ := starter.ReadFile("starter/workflow.yaml") // embedded: cannot fail
	return b
}

// StarterFiles returns every file the starter workflow needs, keyed by
// path relative to the project directory: the workflow itself at
// DefaultPath, the simulated agent's scenario and the plan schema.
func StarterFiles() map[string][]byte {
	files := map[string][]byte{DefaultPath: Template()}
	_ = fs.WalkDir(starter, "starter", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "starter/workflow.yaml" {
			return err
		}
		b, err := starter.ReadFile(p)
		if err != nil {
			return err
		}
		files[".cadence/"+p[len("starter/"):]] = b
		return nil
	})
	return files
}
