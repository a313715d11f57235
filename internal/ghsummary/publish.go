package ghsummary

import (
	"fmt"
	"io"
	"os"
)

// Env is where GitHub Actions wants to hear from a step: the files named
// by GITHUB_STEP_SUMMARY and GITHUB_OUTPUT ("" when unset), and whether
// the process runs in Actions (GITHUB_ACTIONS=true) so that annotations
// are worth printing.
type Env struct {
	SummaryFile string
	OutputFile  string
	Actions     bool
}

// FromEnv reads Env from the process environment through getenv.
func FromEnv(getenv func(string) string) Env {
	return Env{SummaryFile: getenv("GITHUB_STEP_SUMMARY"), OutputFile: getenv("GITHUB_OUTPUT"),
		Actions: getenv("GITHUB_ACTIONS") == "true"}
}

// Enabled reports whether there is anything to write.
func (e Env) Enabled() bool {
	return e.SummaryFile != "" || e.OutputFile != "" || e.Actions
}

// Publish appends the outputs to OutputFile and, when the run is known,
// the summary to SummaryFile, and prints the annotations to w. r is nil
// when the process ended before a run was chosen (a usage error); only
// the status output is meaningful then. Both files are appended to, as
// other steps of the job write them too.
func Publish(e Env, outcome string, r *Run, w io.Writer) error {
	if e.OutputFile != "" {
		if err := appendFile(e.OutputFile, FormatOutputs(Outputs(outcome, r), Delimiter)); err != nil {
			return fmt.Errorf("write GITHUB_OUTPUT: %w", err)
		}
	}
	if r == nil || r.Report == nil {
		return nil
	}
	if e.SummaryFile != "" {
		if err := appendFile(e.SummaryFile, Markdown(*r)); err != nil {
			return fmt.Errorf("write GITHUB_STEP_SUMMARY: %w", err)
		}
	}
	if e.Actions {
		for _, a := range Annotations(*r) {
			fmt.Fprintln(w, a.String())
		}
	}
	return nil
}

// appendFile appends s to the file at path in one write and syncs it.
func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
