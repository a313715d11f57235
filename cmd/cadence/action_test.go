package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The GitHub Action (action.yml) is a composite of scripts/action/*.sh
// around the Actions cache. These tests run the scripts as the action
// does, with a fake GITHUB_* environment and the real cadence binary
// (this test binary, on PATH as cadence), and move the state between
// "jobs" the way the cache does: the paths action.yml caches, copied into
// a fresh checkout elsewhere.

// job is one job of the action: its environment and the files Actions
// reads back.
type job struct {
	t               *testing.T
	dir             string // where the job's files live
	output, summary string
	pathFile        string
	env             []string
	stdout, stderr  string
	code            int
}

func newJob(t *testing.T, env ...string) *job {
	t.Helper()
	d := t.TempDir()
	j := &job{t: t, dir: d, output: filepath.Join(d, "output"), summary: filepath.Join(d, "summary.md"),
		pathFile: filepath.Join(d, "path")}
	j.env = append(os.Environ(), "GITHUB_ACTIONS=true", "GITHUB_OUTPUT="+j.output, "GITHUB_STEP_SUMMARY="+j.summary,
		"GITHUB_PATH="+j.pathFile, "GITHUB_ACTOR=octo", "RUNNER_TEMP="+d, "NO_COLOR=1", "CADENCE_FAILPOINT=",
		"GORACE=atexit_sleep_ms=0")
	j.env = append(j.env, env...)
	return j
}

// script runs scripts/action/NAME in dir, as the action's step does.
func (j *job) script(name, dir string) {
	j.t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "action", name))
	if err != nil {
		j.t.Fatal(err)
	}
	cmd := exec.Command(script)
	cmd.Dir, cmd.Env = dir, j.env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	j.stdout, j.stderr, j.code = out.String(), errb.String(), 0
	if ee, ok := err.(*exec.ExitError); ok {
		j.code = ee.ExitCode()
	} else if err != nil {
		j.t.Fatalf("%s: %v", name, err)
	}
}

// outputs parses GITHUB_OUTPUT as the runner does: name=value lines and
// name<<DELIM heredocs; a later value of a name wins.
func (j *job) outputs() map[string]string {
	j.t.Helper()
	f, err := os.Open(j.output)
	if err != nil {
		j.t.Fatalf("GITHUB_OUTPUT: %v\nstderr:\n%s", err, j.stderr)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok {
			var val []string
			closed := false
			for sc.Scan() {
				if sc.Text() == delim {
					closed = true
					break
				}
				val = append(val, sc.Text())
			}
			if !closed {
				j.t.Fatalf("output %s: heredoc %s never closed", name, delim)
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		name, v, ok := strings.Cut(line, "=")
		if !ok {
			j.t.Fatalf("bad GITHUB_OUTPUT line %q", line)
		}
		out[name] = v
	}
	return out
}

func (j *job) wantOutputs(want map[string]string) {
	j.t.Helper()
	got := j.outputs()
	for k, v := range want {
		if got[k] != v {
			j.t.Errorf("output %s = %q, want %q\nstdout:\n%s\nstderr:\n%s", k, got[k], v, j.stdout, j.stderr)
		}
	}
}

// cachedPaths are the paths action.yml restores and saves, relative to
// the project: read from the file, so that the test moves what the
// action moves.
func cachedPaths(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runs struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	var restore, save []string
	for _, s := range a.Runs.Steps {
		var paths []string
		for _, p := range strings.Split(strings.TrimSpace(s.With["path"]), "\n") {
			paths = append(paths, strings.TrimPrefix(strings.TrimSpace(p), "${{ inputs.directory }}/"))
		}
		switch {
		case strings.HasPrefix(s.Uses, "actions/cache/restore@"):
			restore = paths
		case strings.HasPrefix(s.Uses, "actions/cache/save@"):
			save = paths
		}
	}
	if len(restore) == 0 || strings.Join(restore, " ") != strings.Join(save, " ") {
		t.Fatalf("action.yml restores %q and saves %q: they must be the same paths", restore, save)
	}
	return restore
}

// moveState copies the cached paths of project from into project to, as
// a save in one job and a restore in another do.
func moveState(t *testing.T, from, to string) {
	t.Helper()
	for _, pat := range cachedPaths(t) {
		if strings.Contains(pat, "workflow.yaml") {
			t.Fatalf("action.yml caches %s: the workflow must come from the checkout", pat)
		}
		matches, err := filepath.Glob(filepath.Join(from, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(from, m)
			if err := os.CopyFS(filepath.Join(to, rel), os.DirFS(m)); err != nil {
				// A file, not a directory.
				b, rerr := os.ReadFile(m)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if err := os.WriteFile(filepath.Join(to, rel), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// checkout writes the repository's files of the gated project into a new
// directory: what actions/checkout gives each job.
func checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		".cadence/workflow.yaml": `version: 1
name: gated
agents: {a: {preset: exec, command: [sh, agent.sh]}}
defaults: {agent: a}
steps:
  - {id: plan, prompt: plan}
  - id: ok
    needs: [plan]
    approval: {prompt: 'ship it?'}
  - {id: ship, prompt: ship, needs: [ok]}
`,
		// Each execution of the agent is a line in the ledger, which
		// lives outside every checkout.
		"agent.sh": `p=$(cat); echo "$p" >> "$LEDGER"; printf '{"ok": true}\n'`,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestActionResumesInAnotherJob: a job runs the workflow to its gate
// (the step stays green, status waiting), the state moves through the
// cache paths to another checkout at another path, a job there without an
// answer keeps waiting, and a job with approve answers and resumes: the
// run finishes, every step ran exactly once.
func TestActionResumesInAnotherJob(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger")
	executions := func() []string {
		b, err := os.ReadFile(ledger)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}

	first := checkout(t)
	j1 := newJob(t, "LEDGER="+ledger)
	j1.script("run.sh", first)
	if j1.code != 0 {
		t.Fatalf("run.sh exited %d at a gate, want 0\n%s\n%s", j1.code, j1.stdout, j1.stderr)
	}
	j1.wantOutputs(map[string]string{"status": "waiting", "waiting_gates": "ok", "exit_code": "5"})
	runID := j1.outputs()["run_id"]
	if runID == "" {
		t.Fatal("no run_id output")
	}
	if got := executions(); strings.Join(got, " ") != "plan" {
		t.Fatalf("executions after the first job: %q", got)
	}

	second := checkout(t)
	moveState(t, first, second)
	if err := os.RemoveAll(first); err != nil {
		t.Fatal(err)
	}

	j2 := newJob(t, "LEDGER="+ledger)
	j2.script("run.sh", second)
	if j2.code != 0 {
		t.Fatalf("run.sh exited %d, want 0\n%s\n%s", j2.code, j2.stdout, j2.stderr)
	}
	j2.wantOutputs(map[string]string{"status": "waiting", "run_id": runID, "waiting_gates": "ok", "exit_code": "5"})

	j3 := newJob(t, "LEDGER="+ledger, "CADENCE_APPROVE=ok", "CADENCE_COMMENT=looks good")
	j3.script("run.sh", second)
	if j3.code != 0 {
		t.Fatalf("run.sh exited %d, want 0\n%s\n%s", j3.code, j3.stdout, j3.stderr)
	}
	j3.wantOutputs(map[string]string{"status": "succeeded", "run_id": runID, "waiting_gates": "", "exit_code": "0"})
	if got := executions(); strings.Join(got, " ") != "plan ship" {
		t.Fatalf("executions: %q, want plan then ship, once each", got)
	}
	sum, err := os.ReadFile(j3.summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## cadence: run `" + runID + "` succeeded", "| `plan` | succeeded | 1 / ", "| `ship` | succeeded | 1 / "} {
		if !strings.Contains(string(sum), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	rep := (&project{t: t, dir: second}).inspect()
	if a := step(rep, "ok").Approval; a == nil || a.By != "octo" || a.Comment != "looks good" {
		t.Errorf("gate answer %+v, want by octo with the comment", a)
	}
}

// TestActionRunFailOn: the step fails for the exit codes of fail-on only,
// and a gate answered both ways is refused.
func TestActionRunFailOn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      []string
		wantCode int
		wantExit string
		status   string
	}{
		{"gate waits, step green", nil, 0, "5", "waiting"},
		{"waiting fails when asked", []string{"CADENCE_FAIL_ON=5"}, 5, "5", "waiting"},
		{"approve and reject", []string{"CADENCE_APPROVE=ok", "CADENCE_REJECT=ok"}, 2, "2", "error"},
		{"a usage error fails", []string{"CADENCE_WORKFLOW=missing.yaml"}, 2, "2", "error"},
		{"a gate that is a flag", []string{"CADENCE_APPROVE=--help"}, 2, "2", "error"},
		{"a gate with a quote", []string{"CADENCE_REJECT=ok'; id"}, 2, "2", "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := checkout(t)
			j := newJob(t, append([]string{"LEDGER=" + filepath.Join(t.TempDir(), "ledger")}, tc.env...)...)
			j.script("run.sh", dir)
			if j.code != tc.wantCode {
				t.Fatalf("run.sh exited %d, want %d\n%s\n%s", j.code, tc.wantCode, j.stdout, j.stderr)
			}
			j.wantOutputs(map[string]string{"exit_code": tc.wantExit, "status": tc.status})
		})
	}
}

// release writes a release directory as goreleaser lays it out
// (download/TAG/ASSET, checksums.txt) holding a cadence that prints
// marker, and returns its file:// URL.
func release(t *testing.T, tag, marker string, corrupt bool) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "download", tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	asset := "cadence_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"
	f, err := os.Create(filepath.Join(dir, asset))
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	body := "#!/bin/sh\necho " + marker + "\n"
	for _, name := range []string{"README.md", "cadence"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, asset))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if corrupt {
		sum[0] ^= 0xff
	}
	sums := hex.EncodeToString(sum[:]) + "  " + asset + "\n" + strings.Repeat("0", 64) + "  cadence_other_os.tar.gz\n"
	if err := os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + root
}

// TestActionInstall: the release archive for the runner's platform is
// installed when its checksum matches and refused when it does not; a
// release without one falls back to go install (a stand-in go on PATH
// records how it was called); the install directory goes to GITHUB_PATH.
func TestActionInstall(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Fatalf("the action's release archives cover linux and darwin on amd64 and arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	t.Run("release", func(t *testing.T) {
		j := newJob(t, "CADENCE_VERSION=v9.9.9", "CADENCE_RELEASE_URL="+release(t, "v9.9.9", "from-release", false))
		j.script("install.sh", j.dir)
		if j.code != 0 {
			t.Fatalf("install.sh exited %d\n%s\n%s", j.code, j.stdout, j.stderr)
		}
		bin := filepath.Join(j.dir, "cadence-bin")
		if strings.TrimSpace(j.stdout) != "from-release" {
			t.Errorf("installed cadence printed %q", j.stdout)
		}
		p, _ := os.ReadFile(j.pathFile)
		if strings.TrimSpace(string(p)) != bin {
			t.Errorf("GITHUB_PATH holds %q, want %s", p, bin)
		}
		if _, err := os.Stat(filepath.Join(bin, "README.md")); err == nil {
			t.Error("the archive's other files were installed too")
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		j := newJob(t, "CADENCE_VERSION=v9.9.9", "CADENCE_RELEASE_URL="+release(t, "v9.9.9", "tampered", true))
		j.script("install.sh", j.dir)
		if j.code != 1 || !strings.Contains(j.stderr, "does not match checksums.txt") {
			t.Fatalf("install.sh exited %d, want 1 with the mismatch\n%s", j.code, j.stderr)
		}
		if _, err := os.Stat(filepath.Join(j.dir, "cadence-bin", "cadence")); err == nil {
			t.Error("a binary that failed its checksum was installed")
		}
		if p, _ := os.ReadFile(j.pathFile); len(p) > 0 {
			t.Errorf("GITHUB_PATH written after a failed install: %q", p)
		}
	})
	t.Run("go install", func(t *testing.T) {
		fake := t.TempDir()
		calls := filepath.Join(fake, "calls")
		goScript := "#!/bin/sh\necho \"GOBIN=$GOBIN $*\" >> " + calls + "\nprintf '#!/bin/sh\\necho built\\n' > \"$GOBIN/cadence\"\nchmod 755 \"$GOBIN/cadence\"\n"
		if err := os.WriteFile(filepath.Join(fake, "go"), []byte(goScript), 0o755); err != nil {
			t.Fatal(err)
		}
		j := newJob(t, "CADENCE_VERSION=v9.9.8", "CADENCE_RELEASE_URL="+release(t, "v9.9.9", "wrong", false),
			"PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"))
		j.script("install.sh", j.dir)
		if j.code != 0 || strings.TrimSpace(j.stdout) != "built" {
			t.Fatalf("install.sh exited %d printing %q\n%s", j.code, j.stdout, j.stderr)
		}
		got, _ := os.ReadFile(calls)
		want := "GOBIN=" + filepath.Join(j.dir, "cadence-bin") + " install github.com/cadence-dev/cadence/cmd/cadence@v9.9.8\n"
		if string(got) != want {
			t.Errorf("go called as %q, want %q", got, want)
		}
	})
	for _, v := range []string{"main; rm -rf /", "v1; rm -rf /", "v1.2.3/../../evil", "master"} {
		t.Run("bad version "+v, func(t *testing.T) {
			j := newJob(t, "CADENCE_VERSION="+v)
			j.script("install.sh", j.dir)
			if j.code != 2 || !strings.Contains(j.stderr, "version must be latest or a tag") {
				t.Fatalf("install.sh exited %d\n%s", j.code, j.stderr)
			}
		})
	}
}
