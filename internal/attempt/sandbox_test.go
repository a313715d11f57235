package attempt

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// sandboxOf boxes an attempt's process with what cadence hands it: the
// work dir, the agent's configuration (its config_dir, or the preset's
// own under the HOME it is given), the handoff's directory and the
// outputs directory writable inside the hidden .cadence, the program
// visible; an item's worktree also gets its repository writable. No
// sandbox: no box.
func TestSandboxOf(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj, home := filepath.Join(root, "proj"), filepath.Join(root, "home")
	wt := filepath.Join(proj, ".cadence/worktrees/r1/fix/a")
	for _, d := range []string{proj + "/.cadence/out", proj + "/.cadence/outputs/r1/one", proj + "/.cadence/outputs/r1/fix/a",
		proj + "/.git/worktrees/a", home + "/.claude", root + "/conf", wt, root + "/bin"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{home + "/.claude.json": "{}", wt + "/.git": "gitdir: " + proj + "/.git/worktrees/a\n", root + "/bin/prog": "#!/bin/sh\n"} {
		if err := os.WriteFile(f, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	box := &workflow.Sandbox{Network: true}
	r := &Runner{Dir: proj}
	run := &checkpoint.Run{ID: "r1"}
	agentStep := &workflow.Step{ID: "one", Kind: workflow.KindAgent}
	cmdStep := &workflow.Step{ID: "one", Kind: workflow.KindCommand, Sandbox: box}
	claude := &workflow.Agent{Name: "c", Preset: agent.PresetClaude, Sandbox: box}
	claudeConf := &workflow.Agent{Name: "c", Preset: agent.PresetClaude, Sandbox: box, ConfigDir: root + "/conf"}
	item := NewItem("a", nil)
	item.Workdir = wt
	tests := []struct {
		name        string
		in          *Instance
		ag          *workflow.Agent
		handoff     string
		writable    []string
		notWritable []string
	}{
		{"preset's own configuration under HOME", &Instance{Run: run, Step: agentStep}, claude, proj + "/.cadence/out/one.json",
			[]string{proj, home + "/.claude", home + "/.claude.json", proj + "/.cadence/out", proj + "/.cadence/outputs/r1/one"}, []string{root + "/conf"}},
		{"config_dir instead", &Instance{Run: run, Step: agentStep}, claudeConf, "",
			[]string{proj, root + "/conf", proj + "/.cadence/outputs/r1/one"}, []string{home + "/.claude", proj + "/.cadence/out"}},
		{"command step", &Instance{Run: run, Step: cmdStep}, nil, "",
			[]string{proj, proj + "/.cadence/outputs/r1/one"}, []string{home + "/.claude"}},
		{"an item in its worktree", &Instance{Run: run, Step: &workflow.Step{ID: "fix", Kind: workflow.KindAgent}, Item: item}, claude, "",
			[]string{wt, proj + "/.git", proj + "/.cadence/outputs/r1/fix/a"}, []string{proj}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &try{r: r, in: tc.in, row: &checkpoint.Attempt{N: 1}}
			spec := agent.Spec{Dir: r.WorkDir(tc.in), Env: []string{"HOME=/elsewhere", "HOME=" + home}}
			fn := sandboxOf(tr, tc.ag, spec, tc.handoff)
			if fn == nil {
				t.Fatal("no box")
			}
			argv, err := fn(root + "/bin/prog")
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(argv, " ")
			for _, w := range tc.writable {
				if !strings.Contains(joined, "--bind "+w+" "+w+" ") {
					t.Errorf("%s is not writable: %q", w, argv)
				}
			}
			for _, w := range tc.notWritable {
				if strings.Contains(joined, "--bind "+w+" "+w+" ") {
					t.Errorf("%s is writable: %q", w, argv)
				}
			}
			for _, want := range []string{"--tmpfs " + proj + "/.cadence ", "--ro-bind " + root + "/bin/prog " + root + "/bin/prog ", "--chdir " + spec.Dir + " --"} {
				if !strings.Contains(joined+" ", want) {
					t.Errorf("argv lacks %q: %q", want, argv)
				}
			}
		})
	}
	// No sandbox: anywhere, no box.
	if fn := sandboxOf(&try{r: r, in: &Instance{Run: run, Step: agentStep}, row: &checkpoint.Attempt{N: 1}},
		&workflow.Agent{Name: "c", Preset: agent.PresetClaude}, agent.Spec{Dir: proj}, ""); fn != nil {
		t.Errorf("an agent without sandbox: is boxed")
	}
	if !slices.Contains(presetConfigPaths[agent.PresetCodex], "~/.codex") {
		t.Errorf("codex's configuration is not its ~/.codex: %q", presetConfigPaths[agent.PresetCodex])
	}
}
