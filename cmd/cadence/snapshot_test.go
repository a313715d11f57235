package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitCommitAll makes the project a git repository whose one commit holds
// every file in it, with no identity or configuration of the machine's.
func gitCommitAll(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "start"},
	} {
		gitOut(t, dir, args...)
	}
}

// gitOut runs git in dir and returns its output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// treeAgent records, in the ignored directory seen/, the prompt and the
// work tree each attempt finds; its first attempt breaks the tree (edits
// a.txt, deletes b.txt, adds junk.txt and gen/x.txt) and fails its
// schema, the second answers.
const treeAgent = `n=$CADENCE_ATTEMPT
mkdir -p seen
cat > seen/prompt-$n.txt
{ cat a.txt; [ -e b.txt ] && echo "b present" || echo "b absent"; [ -e junk.txt ] && echo "junk present" || echo "junk absent"; } > seen/tree-$n.txt
if [ "$n" = 1 ]; then
  echo broken > a.txt; rm b.txt; echo junk > junk.txt; mkdir -p gen; echo x > gen/x.txt
  echo '{"ok": "no"}'
else
  echo '{"ok": true}'
fi
`

// TestRestoreOnRetryFindsTreeRestored: with restore_on_retry, the second
// attempt finds the work tree as the first found it, its prompt says what
// was put back, HEAD and the index are untouched, and cadence diff prints
// what the first attempt did.
func TestRestoreOnRetryFindsTreeRestored(t *testing.T) {
	p := newProject(t, `version: 1
defaults:
  agent: tree
  restore_on_retry: true
  retry: {max_attempts: 2, backoff: fixed, initial: 0s, jitter: none}
agents:
  tree: {preset: exec, command: [sh, agent.sh]}
steps:
  - {id: one, prompt: go, handoff: {schema: s.json}}
`, map[string]string{"s.json": boolSchema, "agent.sh": treeAgent, "a.txt": "original\n", "b.txt": "bee\n", ".gitignore": "seen/\n"})
	gitCommitAll(t, p.dir)
	head := gitOut(t, p.dir, "rev-parse", "HEAD")
	index := gitOut(t, p.dir, "ls-files", "--stage")

	r := p.cadence(nil, "run")
	r.exits(t, 0)
	for n := 1; n <= 2; n++ {
		b, err := os.ReadFile(filepath.Join(p.dir, "seen", "tree-"+itoa(n)+".txt"))
		if want := "original\nb present\njunk absent\n"; err != nil || string(b) != want {
			t.Errorf("attempt %d found the tree %q (%v), want %q", n, b, err, want)
		}
	}
	prompt, err := os.ReadFile(filepath.Join(p.dir, "seen", "prompt-2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Note: the work tree was put back as it was before attempt 1 (restore_on_retry): the changes that attempt made are gone. " +
		"Files restored or removed: a.txt, b.txt, gen/x.txt, junk.txt."; !strings.Contains(string(prompt), want) {
		t.Errorf("attempt 2's prompt lacks %q:\n%s", want, prompt)
	}
	if got := gitOut(t, p.dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved: %s, was %s", got, head)
	}
	if got := gitOut(t, p.dir, "ls-files", "--stage"); got != index {
		t.Errorf("the index changed:\n%s\nwas\n%s", got, index)
	}
	if st := gitOut(t, p.dir, "status", "--porcelain", "--", ".", ":!.cadence"); st != "" {
		t.Errorf("the work tree differs from the commit after the run:\n%s", st)
	}
	for _, a := range step(p.inspect(), "one").Attempts {
		if a.Snapshot == "" || a.SnapshotAfter == "" {
			t.Errorf("attempt %d has snapshots %q and %q, want both", a.N, a.Snapshot, a.SnapshotAfter)
		}
	}

	for n, want := range map[string]string{"1": "changed   4 files: a.txt, b.txt, gen/x.txt, junk.txt (cadence diff shows them)\n", "2": "changed   no file (cadence diff shows them)\n"} {
		r := p.cadence(nil, "inspect", "--step", "one", "--attempt", n)
		r.exits(t, 0)
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect of attempt %s lacks %q:\n%s", n, want, r.stdout)
		}
	}
	d := p.cadence(nil, "diff", "one", "--attempt", "1")
	d.exits(t, 0)
	lines := strings.Split(d.stdout, "\n")
	for _, want := range []string{"diff --git a/a.txt b/a.txt", "-original", "+broken", "diff --git a/b.txt b/b.txt", "deleted file mode 100644",
		"diff --git a/gen/x.txt b/gen/x.txt", "diff --git a/junk.txt b/junk.txt", "+junk"} {
		if !slices.Contains(lines, want) {
			t.Errorf("cadence diff of attempt 1 lacks the line %q:\n%s", want, d.stdout)
		}
	}
	if !strings.Contains(d.stderr, "attempt 1 of one, run ") || !strings.Contains(d.stderr, "(recorded after the attempt)") {
		t.Errorf("cadence diff says: %q", d.stderr)
	}
	none := p.cadence(nil, "diff", "one") // the last attempt: it changed nothing
	none.exits(t, 0)
	if none.stdout != "" || !strings.Contains(none.stderr, "attempt 2 of one") {
		t.Errorf("cadence diff of attempt 2: stdout %q, stderr %q; want no change", none.stdout, none.stderr)
	}
	bad := p.cadence(nil, "diff", "one", "--attempt", "3")
	if bad.code != exitUsage || !strings.Contains(bad.stderr, "step one has attempts 1 to 2 in run ") {
		t.Errorf("cadence diff --attempt 3: exit %d, stderr %q", bad.code, bad.stderr)
	}

	// The report's entry for the failed attempt names its files and the
	// command that prints its change.
	runID := p.inspect().Run.ID
	rep := p.cadence(nil, "report")
	rep.exits(t, 0)
	page, err := os.ReadFile(strings.TrimSpace(rep.stdout))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Changed 4 files: a.txt, b.txt, gen/x.txt, junk.txt.", "<code>cadence diff one --run " + runID + " --attempt 1</code>"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestDiffOfAnItemInItsWorktree: cadence diff --item prints what the
// item's attempt changed in its own worktree, and nothing of the other
// item's.
func TestDiffOfAnItemInItsWorktree(t *testing.T) {
	p := newProject(t, `version: 1
defaults: {agent: edit, retry: {max_attempts: 1}}
agents:
  edit: {preset: exec, command: [sh, agent.sh]}
steps:
  - id: fix
    prompt: 'fix {{ .Item.Key }}'
    map: {items: {file: items.json}, key: /id, workspace: worktree}
`, map[string]string{"agent.sh": `cat > /dev/null
echo "made by $CADENCE_ITEM_KEY" > "out-$CADENCE_ITEM_KEY.txt"
sed -i "s/shared/shared, edited by $CADENCE_ITEM_KEY/" a.txt
echo '{"ok": true}'
`, "items.json": `[{"id": "a"}, {"id": "b"}]`, "a.txt": "shared\n", ".gitignore": ".cadence/\n"})
	gitCommitAll(t, p.dir)
	p.cadence(nil, "run").exits(t, 0)

	d := p.cadence(nil, "diff", "fix", "--item", "a")
	d.exits(t, 0)
	want := `diff --git a/a.txt b/a.txt
index 8a205e8..e9d8def 100644
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-shared
+shared, edited by a
diff --git a/out-a.txt b/out-a.txt
new file mode 100644
index 0000000..0c87a86
--- /dev/null
+++ b/out-a.txt
@@ -0,0 +1 @@
+made by a
`
	if d.stdout != want {
		t.Errorf("cadence diff fix --item a:\n%s\nwant\n%s", d.stdout, want)
	}
	if !strings.Contains(d.stderr, "attempt 1 of fix[a], run ") {
		t.Errorf("cadence diff says: %q", d.stderr)
	}
}

// Outside a git repository attempts have no snapshot: the run is as
// before, and cadence diff says why it has nothing to print.
func TestDiffOutsideGit(t *testing.T) {
	p := newProject(t, `version: 1
defaults: {agent: a, restore_on_retry: true}
agents:
  a: {preset: exec, command: [sh, -c, 'cat >/dev/null; echo "{\"ok\": true}"']}
steps:
  - {id: one, prompt: go}
`, nil)
	p.cadence(nil, "run").exits(t, 0)
	d := p.cadence(nil, "diff", "one")
	if d.code != exitFailed || !strings.Contains(d.stderr, "attempt 1 of one in run ") ||
		!strings.Contains(d.stderr, "has no snapshot of its work tree: snapshots are taken only in a git repository with a commit") {
		t.Errorf("cadence diff outside git: exit %d, stdout %q, stderr %q", d.code, d.stdout, d.stderr)
	}
}
