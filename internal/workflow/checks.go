package workflow

import (
	"fmt"
	"regexp"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Check is one command run after a step's handoff passed its schema; the
// step succeeds only when every check passes on the same attempt (SPEC
// §11).
type Check struct {
	Name string
	// Argv is what runs: ["/bin/sh", "-c", Command] when the workflow gave
	// a string, the list itself when it gave a list.
	Argv []string
	// Command is the check as written, for prompts and inspect.
	Command string
	// Shell is set when the workflow gave a string, run by /bin/sh: its
	// exit codes 126 and 127 then mean the shell could not run a program.
	Shell         bool
	Timeout       time.Duration // past it the check is killed and fails (default DefaultCheckTimeout)
	FeedbackLines int           // last lines of its output quoted in the follow-up (default DefaultFeedbackLines)
}

// Defaults of a check.
const (
	DefaultCheckTimeout  = 10 * time.Minute
	DefaultFeedbackLines = 60
)

// checkName is the form of a check name: it names a file under .cadence/.
var checkName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// rawChecks is a checks: list as written; set tells an absent list (the
// defaults apply) from an empty one (no checks).
type rawChecks struct {
	list []rawCheck
	set  bool
}

type rawCheck struct {
	name          field[string]
	argv          field[[]string]
	command       string
	shell         bool
	timeout       field[time.Duration]
	feedbackLines field[int]
	at            at
}

func (r rawChecks) or(d rawChecks) rawChecks {
	if r.set {
		return r
	}
	return d
}

// checks decodes a checks: list.
func (d *decoder) checks(e entry) rawChecks {
	seq, ok := unwrap(e.val).(*ast.SequenceNode)
	if !ok {
		if isNull(e.val) {
			return rawChecks{set: true}
		}
		d.fail(e.valAt(), "want a list of checks, got %s", describe(e.val))
		return rawChecks{}
	}
	out := rawChecks{set: true}
	for i, item := range seq.Values {
		path := fmt.Sprintf("%s[%d]", e.path, i)
		c := rawCheck{at: where(item, path)}
		if _, ok := unwrap(item).(*ast.MappingNode); !ok {
			d.fail(c.at, "want a mapping with name and run, got %s", describe(item))
			continue
		}
		d.fields(item, path, []string{"name", "run", "timeout", "feedback_lines"}, func(e entry) {
			switch e.name {
			case "name":
				c.name = d.str(e)
				if c.name.set && !checkName.MatchString(c.name.v) {
					d.fail(c.name.at, "invalid check name %q (want lowercase letters, digits, _ and -)", c.name.v)
					c.name.set = false
				}
			case "run":
				c.argv, c.command, c.shell = d.command(e)
			case "timeout":
				c.timeout = d.duration(e, time.Second)
			case "feedback_lines":
				c.feedbackLines = d.integer(e, 1, 10000)
			}
		})
		switch {
		case !c.name.set && !d.hasErrorAt(path+".name"):
			d.fail(c.at, "missing name")
		case !c.argv.set && !d.hasErrorAt(path+".run"):
			d.fail(c.at, "missing run (a command line for /bin/sh, or a list that is the argv)")
		}
		out.list = append(out.list, c)
	}
	return out
}

// command decodes a check's run: a string is a command line for /bin/sh,
// a list is the argv itself.
func (d *decoder) command(e entry) (argv field[[]string], text string, shell bool) {
	if _, ok := unwrap(e.val).(*ast.SequenceNode); ok {
		argv = d.stringList(e)
		if argv.set && len(argv.v) == 0 {
			d.fail(argv.at, "must not be empty")
			argv.set = false
		}
		return argv, shellQuote(argv.v), false
	}
	s := d.str(e)
	if !s.set {
		return field[[]string]{}, "", false
	}
	if s.v == "" {
		d.fail(s.at, "must not be empty")
		return field[[]string]{}, "", false
	}
	return field[[]string]{v: []string{"/bin/sh", "-c", s.v}, set: true, at: s.at}, s.v, true
}

// hasErrorAt reports whether an error was already reported for key.
func (d *decoder) hasErrorAt(key string) bool {
	for _, e := range d.errs {
		if e.Key == key {
			return true
		}
	}
	return false
}

// buildChecks applies the defaults to a step's merged checks and checks
// that names are unique in the step.
func (l *loader) buildChecks(r rawChecks) []Check {
	var out []Check
	seen := map[string]at{}
	for _, c := range r.list {
		if !c.name.set {
			continue
		}
		if first, dup := seen[c.name.v]; dup {
			l.fail(c.name.at, "duplicate check name %q (first at line %d)", c.name.v, first.line)
			continue
		}
		seen[c.name.v] = c.name.at
		if !c.argv.set {
			continue
		}
		if !c.shell {
			l.w.programs = append(l.w.programs, programRef{what: "check " + c.name.v, prog: c.argv.v[0], at: c.argv.at})
		}
		out = append(out, Check{
			Name: c.name.v, Argv: c.argv.v, Command: c.command, Shell: c.shell,
			Timeout:       c.timeout.get(DefaultCheckTimeout),
			FeedbackLines: c.feedbackLines.get(DefaultFeedbackLines),
		})
	}
	return out
}

// shellQuote shows an argv as a command line, quoting the words a shell
// would split or expand: what a user sees in prompts and inspect.
func shellQuote(argv []string) string {
	var b []byte
	for i, w := range argv {
		if i > 0 {
			b = append(b, ' ')
		}
		if w != "" && plainWord.MatchString(w) {
			b = append(b, w...)
			continue
		}
		b = append(b, '\'')
		for _, c := range []byte(w) {
			if c == '\'' {
				b = append(b, `'\''`...)
			} else {
				b = append(b, c)
			}
		}
		b = append(b, '\'')
	}
	return string(b)
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)
