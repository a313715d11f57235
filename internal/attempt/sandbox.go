package attempt

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/sandbox"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// presetConfigPaths are where each CLI preset keeps its login, settings
// and sessions when its entry sets no config_dir: writable in its box, as
// the CLI writes there on every run. A path that does not exist is not
// created (log the CLI in once outside the box).
var presetConfigPaths = map[string][]string{
	agent.PresetClaude:   {"~/.claude", "~/.claude.json"},
	agent.PresetCodex:    {"~/.codex"},
	agent.PresetGemini:   {"~/.gemini"},
	agent.PresetQwen:     {"~/.qwen"},
	agent.PresetOpencode: {"~/.local/share/opencode", "~/.config/opencode", "~/.cache/opencode", "~/.local/state/opencode"},
	agent.PresetPi:       {"~/.pi"},
	agent.PresetCopilot:  {"~/.copilot", "~/.cache/copilot"},
}

// sandboxOf returns the agent.Spec.Sandbox of the attempt's process: the
// command step's box, or the agent's; nil when it runs unboxed. The box
// is built when the program is known, and bwrap looked up then: a
// workflow that asks for a box never runs the process without one.
func sandboxOf(t *try, ag *workflow.Agent, spec agent.Spec, handoffPath string) func(string, ...string) ([]string, error) {
	var (
		sb     *workflow.Sandbox
		config []string
	)
	switch {
	case t.in.isCommand() && t.plan.kind != checkpoint.KindHelp:
		sb = t.in.Step.Sandbox
	case ag != nil:
		sb = ag.Sandbox
		config = presetConfigPaths[ag.Preset]
		if ag.ConfigDir != "" {
			config = []string{ag.ConfigDir}
		}
	}
	if sb == nil {
		return nil
	}
	project, work := t.r.Dir, spec.Dir
	b := sandbox.Box{
		Config:    sb.Config(),
		Home:      envValue(spec.Env, "HOME"),
		WorkDir:   work,
		StateDirs: []string{filepath.Join(project, checkpoint.CadenceDir), filepath.Join(work, checkpoint.CadenceDir)},
		Writable:  slices.Concat(config, []string{outputsDir(project, t.in)}),
		Readable:  []string{filepath.Join(t.attemptsDir(), strconv.Itoa(t.row.N)+".schema.json")},
	}
	if b.Home == "" {
		b.Home, _ = os.UserHomeDir()
	}
	if handoffPath != "" {
		b.Writable = append(b.Writable, filepath.Dir(handoffPath))
	}
	if common := worktreeCommonDir(work); common != "" {
		b.Writable = append(b.Writable, common)
	}
	if ag != nil && ag.Scenario != "" {
		b.Readable = append(b.Readable, ag.Scenario)
	}
	return func(program string, writable ...string) ([]string, error) {
		bwrap, err := sandbox.Find("")
		if err != nil {
			return nil, err
		}
		b := b
		b.Readable = append(b.Readable[:len(b.Readable):len(b.Readable)], program)
		b.Writable = append(b.Writable[:len(b.Writable):len(b.Writable)], writable...)
		return b.Argv(bwrap)
	}
}

// worktreeCommonDir is the repository directory (objects, refs) of a git
// worktree at dir, which git in the worktree writes to: "" when dir is
// not a linked worktree (its .git is a directory, inside dir, or absent).
func worktreeCommonDir(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return ""
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	parent := filepath.Dir(filepath.Clean(gitdir))
	if filepath.Base(parent) != "worktrees" {
		return ""
	}
	return filepath.Dir(parent)
}

// envValue is the value of key in env, the last one when it is set twice
// (as exec.Cmd takes it); "" when unset.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
