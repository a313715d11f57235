package workflow

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/cadence-dev/cadence/internal/sandbox"
)

// Sandbox is a sandbox: mapping with its defaults applied (SPEC §19): the
// process of an agent or a command step runs under bubblewrap. Paths are
// absolute, or start with ~/, which is the process's home directory.
type Sandbox struct {
	// Network false: the process has no network at all. Default true,
	// since agents need their model's API.
	Network bool
	// Write, Read and Hide add paths writable, visible read-only, and
	// replaced by empty ones, to the box's own (the work directory, the
	// agent's configuration directory and the handoff writable; ~/.ssh,
	// ~/.aws, ~/.gnupg, ~/.config/gh, ~/.netrc, ~/.docker and .cadence/
	// hidden).
	Write, Read, Hide []string
}

// Config is the box's configuration as package sandbox takes it.
func (s *Sandbox) Config() sandbox.Config {
	return sandbox.Config{Network: s.Network, Write: s.Write, Read: s.Read, Hide: s.Hide}
}

// rawSandbox is a sandbox: mapping as written; unset keys inherit, key by
// key, from the less specific one (a step's from its agent's, an agent's
// from defaults').
type rawSandbox struct {
	network           field[bool]
	write, read, hide field[[]string]
	at                at // the sandbox: key
}

var sandboxKeys = []string{"network", "write", "read", "hide"}

func (d *decoder) sandbox(e entry) *rawSandbox {
	r := &rawSandbox{at: e.keyAt()}
	d.fields(e.val, e.path, sandboxKeys, func(e entry) {
		switch e.name {
		case "network":
			r.network = d.boolean(e)
		case "write":
			r.write = d.sandboxPaths(e)
		case "read":
			r.read = d.sandboxPaths(e)
		case "hide":
			r.hide = d.sandboxPaths(e)
		}
	})
	return r
}

// sandboxPaths decodes a list of paths: each non-empty, ~ or ~/… for the
// home directory (never ~user), and not the root directory.
func (d *decoder) sandboxPaths(e entry) field[[]string] {
	f := d.stringList(e)
	if !f.set {
		return f
	}
	seq := unwrap(e.val).(*ast.SequenceNode)
	for i, p := range f.v {
		a := where(seq.Values[i], fmt.Sprintf("%s[%d]", e.path, i))
		switch {
		case p == "":
			d.fail(a, "empty path")
			f.set = false
		case strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/"):
			d.fail(a, "path %q: only ~ or ~/ is expanded, not ~user (write the path out)", p)
			f.set = false
		case filepath.Clean(p) == "/":
			d.fail(a, "path %q is the whole filesystem: name the directories the process needs", p)
			f.set = false
		}
	}
	return f
}

// over merges r over the less specific d, key by key; either may be nil.
func (r *rawSandbox) over(d *rawSandbox) *rawSandbox {
	switch {
	case r == nil:
		return d
	case d == nil:
		return r
	}
	return &rawSandbox{
		network: r.network.or(d.network),
		write:   r.write.or(d.write),
		read:    r.read.or(d.read),
		hide:    r.hide.or(d.hide),
		at:      r.at,
	}
}

// buildSandbox applies the defaults to a sandbox: mapping, resolving
// relative paths against the project directory, and records that the
// workflow needs bwrap (CheckPrograms reports it missing, naming the
// package). what is whose box it is, for that report. nil for nil.
func (l *loader) buildSandbox(r *rawSandbox, what string) *Sandbox {
	if r == nil {
		return nil
	}
	ref := programRef{what: what + " (sandbox)", prog: sandbox.Program, at: r.at, pkg: sandbox.Package}
	if !slices.ContainsFunc(l.w.programs, func(p programRef) bool { return p.prog == ref.prog && p.at == ref.at }) {
		l.w.programs = append(l.w.programs, ref) // once per sandbox: written, however many use it
	}
	abs := func(ps []string) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") && l.dir != "" {
				p = filepath.Join(l.dir, p)
			}
			out = append(out, filepath.Clean(p))
		}
		return out
	}
	write := abs(r.write.get(nil))
	for _, w := range write {
		ref := programRef{what: what + " (sandbox)", prog: w, at: r.write.at}
		if !slices.ContainsFunc(l.w.boxWrite, func(p programRef) bool { return p.prog == ref.prog && p.at == ref.at }) {
			l.w.boxWrite = append(l.w.boxWrite, ref)
		}
	}
	return &Sandbox{
		Network: r.network.get(true),
		Write:   write,
		Read:    abs(r.read.get(nil)),
		Hide:    abs(r.hide.get(nil)),
	}
}

// agentSandbox sets an agent's box: its sandbox: over defaults'. An
// openai agent runs no process, so it has none; a sandbox: written on it
// is a mistake.
func (l *loader) agentSandbox(r rawAgent, defaults *rawSandbox) {
	a := l.w.Agents[r.name]
	if a == nil {
		return
	}
	if a.Preset == "openai" {
		if r.sandbox != nil {
			l.fail(r.sandbox.at, "agent %s (preset openai) runs no process on this machine: a sandbox does not apply", r.name)
		}
		return
	}
	a.Sandbox = l.buildSandbox(r.sandbox.over(defaults), "agent "+r.name)
}

// text is the box as Changes compares it: "(none)" for no box.
func (s *Sandbox) text() string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprintf("network=%v write=%s read=%s hide=%s", s.Network, list(s.Write), list(s.Read), list(s.Hide))
}
