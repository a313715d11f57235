package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestG8RunOfAnOlderCadenceResumes checks the workflow hash's backward
// compatibility: a run stored by a cadence whose hash covered only the
// workflow file (workflow_sha256 of the file, no workflow_files) resumes
// without a spurious refusal while the file is unchanged, and is still
// refused, with the setting named, when the file changed.
func TestG8RunOfAnOlderCadenceResumes(t *testing.T) {
	wf := `version: 1
defaults: {agent: sim}
agents:
  sim: {preset: sim, scenario: scenario.yaml}
steps:
  - id: one
    prompt_file: one.md
    handoff: {schema: s.json}
`
	p := newProject(t, wf, map[string]string{
		"one.md": "answer", "s.json": boolSchema,
		"scenario.yaml": "steps:\n  one: [{rate_limit: {retry_after: 1h}}]\n",
	})
	p.cadence(nil, "run", "--max-wait", "1s").exits(t, 3)

	// Make the stored run what the previous version stored.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(p.dir, ".cadence", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(wf))
	res, err := db.Exec(`UPDATE runs SET workflow_sha256 = ?, workflow_files = NULL`, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("updated %d runs, want 1", n)
	}
	db.Close()

	r := p.cadence(nil, "resume", "--max-wait", "1s")
	r.exits(t, 3)
	if strings.Contains(r.stderr, "changed") {
		t.Fatalf("an unchanged workflow of an older run was refused:\n%s", r.stderr)
	}
	// A file the older run did not record may change unnoticed, as it did
	// then; a change of the workflow file itself is still refused.
	changed := strings.Replace(wf, "defaults: {agent: sim}", "defaults: {agent: sim, retry: {max_attempts: 5}}", 1)
	if err := os.WriteFile(filepath.Join(p.dir, ".cadence", "workflow.yaml"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	r = p.cadence(nil, "resume", "--max-wait", "1s")
	r.exits(t, 2)
	if !strings.Contains(r.stderr, "max_attempts") {
		t.Fatalf("the refusal does not name the change:\n%s", r.stderr)
	}
}
