package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// ghWorkflow is the part of a GitHub Actions workflow file the example's
// test reads.
type ghWorkflow struct {
	Jobs map[string]struct {
		Steps []struct {
			ID   string            `yaml:"id"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestActionExampleWorkflow: examples/github/workflow.yml gives the
// action only inputs action.yml declares and reads only outputs it sets;
// its step that takes the gate from a comment keeps a step id and nothing
// else; and the example project runs to its gate in one job and, approved
// in a job at another path, finishes with each step run once.
func TestActionExampleWorkflow(t *testing.T) {
	var action struct {
		Inputs  map[string]any `yaml:"inputs"`
		Outputs map[string]any `yaml:"outputs"`
	}
	readYAML(t, filepath.Join("..", "..", "action.yml"), &action)
	var wf ghWorkflow
	src := readYAML(t, filepath.Join("..", "..", "examples", "github", "workflow.yml"), &wf)

	var answer string
	used := false
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			if s.ID == "answer" {
				answer = s.Run
			}
			if !strings.HasPrefix(s.Uses, "cadence-dev/cadence@") {
				continue
			}
			used = true
			for k := range s.With {
				if _, ok := action.Inputs[k]; !ok {
					t.Errorf("the example gives input %q, which action.yml does not declare", k)
				}
			}
		}
	}
	if !used || answer == "" {
		t.Fatalf("the example has no cadence action step (%v) or no answer step", used)
	}
	for _, m := range regexp.MustCompile(`steps\.cadence\.outputs\.(\w+)`).FindAllStringSubmatch(src, -1) {
		if _, ok := action.Outputs[m[1]]; !ok {
			t.Errorf("the example reads output %q, which action.yml does not set", m[1])
		}
	}

	for _, tc := range []struct{ comment, input, want string }{
		{"/approve ship-gate", "", "ship-gate"},
		{"/approve implement/2/review\nthanks!", "", "implement/2/review"},
		{"/approve ship-gate; rm -rf /", "", ""},
		{"/approve $(id)", "", ""},
		{"/approve --help", "", ""},
		{"", "-x", ""},
		{"/approve a\r", "", ""},
		{"", "ship-gate", "ship-gate"},
		{"", "x\nstatus=succeeded", ""},
	} {
		out := filepath.Join(t.TempDir(), "output")
		cmd := exec.Command("bash", "-e", "-c", answer)
		cmd.Env = append(os.Environ(), "COMMENT="+tc.comment, "INPUT="+tc.input, "GITHUB_OUTPUT="+out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("answer step with %q: %v\n%s", tc.comment, err, b)
		}
		got, _ := os.ReadFile(out)
		if string(got) != "gate="+tc.want+"\n" {
			t.Errorf("comment %q input %q: GITHUB_OUTPUT %q, want gate=%s", tc.comment, tc.input, got, tc.want)
		}
	}

	first := copyExample(t, "github")
	j1 := newJob(t)
	j1.script("run.sh", first)
	if j1.code != 0 {
		t.Fatalf("run.sh exited %d\n%s\n%s", j1.code, j1.stdout, j1.stderr)
	}
	j1.wantOutputs(map[string]string{"status": "waiting", "waiting_gates": "ship-gate"})
	second := copyExample(t, "github")
	moveState(t, first, second)
	j2 := newJob(t, "CADENCE_APPROVE=ship-gate")
	j2.script("run.sh", second)
	if j2.code != 0 {
		t.Fatalf("run.sh exited %d\n%s\n%s", j2.code, j2.stdout, j2.stderr)
	}
	j2.wantOutputs(map[string]string{"status": "succeeded", "run_id": j1.outputs()["run_id"]})
	rep := (&project{t: t, dir: second}).inspect()
	for _, id := range []string{"plan", "ship"} {
		if s := step(rep, id); s.Status != "succeeded" || len(s.Attempts) != 1 {
			t.Errorf("step %s: %s after %d attempts, want succeeded after 1", id, s.Status, len(s.Attempts))
		}
	}
}

// readYAML decodes a YAML file into v and returns its text.
func readYAML(t *testing.T, path string, v any) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}
