package workflow

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// defaultPrograms are the programs the CLI presets start when the agent
// gives no command.
var defaultPrograms = map[string]string{
	"claude":   "claude",
	"codex":    "codex",
	"gemini":   "gemini",
	"qwen":     "qwen",
	"opencode": "opencode",
	"pi":       "pi",
	"copilot":  "copilot",
}

// CheckPrograms reports every agent and check whose program cannot be
// started: a bare name found on no directory of PATH (the agent's own
// env: PATH when it sets one), or a path, relative to the project
// directory, that is missing, a directory or not executable. A program
// given as a template is rendered only at run time and is not checked;
// neither is a check given as a string, which /bin/sh runs.
//
// It is separate from Load because it looks at the machine rather than at
// the file: run and resume call it before anything starts, so that a typo
// in a program's name ends the command with the line that holds it instead
// of failing attempts (and tripping the agent's circuit) at run time.
func CheckPrograms(w *Workflow) error {
	var errs Errors
	// A program is looked up once per PATH it is looked up in: a workflow
	// of 10,000 command steps usually names a handful of programs.
	type lookup struct{ prog, path string }
	found := map[lookup]error{}
	for _, r := range w.programs {
		if strings.Contains(r.prog, "{{") {
			continue
		}
		k := lookup{r.prog, r.path}
		err, seen := found[k]
		if !seen {
			err = findProgram(r.prog, w.Dir, r.path)
			found[k] = err
		}
		if err != nil {
			msg := r.what + ": " + programProblem(r.prog, err)
			if r.pkg != "" {
				msg += " (install the " + r.pkg + " package, e.g. apt-get install " + r.pkg + "; cadence never runs it unboxed)"
			}
			errs = append(errs, &Error{File: w.Path, Line: r.at.line, Column: r.at.col, Key: r.at.key, Msg: msg})
		}
	}
	for _, r := range w.boxWrite {
		if err := checkWritePath(r.prog); err != nil {
			errs = append(errs, &Error{File: w.Path, Line: r.at.line, Column: r.at.col, Key: r.at.key,
				Msg: r.what + ": write: " + err.Error()})
		}
	}
	if len(errs) > 0 {
		return errs.tidy()
	}
	return nil
}

// checkWritePath checks that a sandbox's write: path exists: bwrap can
// only open for writing what is there. A path under ~ is the home the
// process is given, which may not be cadence's: it is checked when the
// box is built.
func checkWritePath(p string) error {
	if p == "~" || strings.HasPrefix(p, "~/") {
		return nil
	}
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("path " + p + " does not exist (create it, or remove it from write:)")
		}
		return err
	}
	return nil
}

// programRef is a program an agent or a check starts, where the workflow
// names it.
type programRef struct {
	what string // "agent NAME" or "check NAME"
	prog string // as written: a template is rendered only at run time
	path string // the agent's own PATH setting, if any
	pkg  string // the package that installs prog, when cadence knows it
	at   at
}

// programProblem says why prog cannot be started, in the words a user
// fixing the workflow needs.
func programProblem(prog string, err error) string {
	switch {
	case errors.Is(err, exec.ErrNotFound) && !strings.ContainsRune(prog, filepath.Separator):
		return "program " + prog + " not found on PATH"
	case errors.Is(err, os.ErrNotExist):
		return "program " + prog + " not found (a path with a slash is relative to the project directory)"
	}
	return "program " + prog + " cannot be started: " + err.Error()
}

// findProgram checks that prog can be started as an agent or a check
// starts it: a name with a slash relative to dir, a bare name on path
// (cadence's own PATH when path is "").
func findProgram(prog, dir, path string) error {
	if strings.ContainsRune(prog, filepath.Separator) {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		fi, err := os.Stat(prog)
		switch {
		case err != nil:
			return err
		case fi.IsDir():
			return errors.New("it is a directory")
		case fi.Mode()&0o111 == 0:
			return errors.New("it is not executable")
		}
		return nil
	}
	if path == "" {
		_, err := exec.LookPath(prog)
		return err
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if _, err := exec.LookPath(filepath.Join(d, prog)); err == nil {
			return nil
		}
	}
	return exec.ErrNotFound
}
