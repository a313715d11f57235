package projectid

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

func writeID(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, ".cadence"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(dir), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
		err        string // a part of the error, "" for none
	}{
		{name: "a readable name", body: "billing-api\n", want: "billing-api"},
		{name: "spaces around", body: "  p-0123abcd \r\n", want: "p-0123abcd"},
		{name: "empty", body: "", err: `holds "", not an id`},
		{name: "two lines", body: "a\nb\n", err: "not an id"},
		{name: "a space inside", body: "my project", err: "not an id"},
		{name: "a path", body: "../other", err: "not an id"},
		{name: "65 characters", body: strings.Repeat("x", 65), err: "not an id"},
		{name: "binary", body: "\x00\xff", err: "not an id"},
		{name: "huge", body: strings.Repeat("y", 5000), err: "larger than 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeID(t, dir, tt.body)
			got, err := Read(dir)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), Path(dir)) {
					t.Fatalf("Read = %q, %v; want an error naming %s and saying %q", got, err, Path(dir), tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Read = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReadWithoutFile(t *testing.T) {
	id, err := Read(t.TempDir())
	if err != nil || id != "" {
		t.Fatalf("Read of a project without an id = %q, %v; want \"\", nil", id, err)
	}
}

// Ensure keeps an existing id, and processes creating the id at once
// all end up with the one that is on disk.
func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	writeID(t, dir, "kept\n")
	if id, err := Ensure(dir); err != nil || id != "kept" {
		t.Fatalf("Ensure with an id = %q, %v; want kept", id, err)
	}

	dir = t.TempDir()
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = Ensure(dir)
		}()
	}
	wg.Wait()
	onDisk, err := Read(dir)
	if err != nil || !strings.HasPrefix(onDisk, "p-") || len(onDisk) != len("p-")+16 {
		t.Fatalf("id on disk %q, %v; want p- and 16 hex digits", onDisk, err)
	}
	for i := range n {
		if errs[i] != nil || ids[i] != onDisk {
			t.Errorf("Ensure #%d = %q, %v; want the id on disk %q", i, ids[i], errs[i], onDisk)
		}
	}
	left, err := filepath.Glob(filepath.Join(dir, ".cadence", ".project-*"))
	if err != nil || len(left) != 0 {
		t.Errorf("temporary files left: %v %v", left, err)
	}
	if other, err := Ensure(t.TempDir()); err != nil || other == onDisk {
		t.Errorf("another project got %q, %v; want an id of its own", other, err)
	}
}

// A project whose id file is gone gets back the id its own state's runs
// have, and reads them meanwhile; a state shared through another path
// gives a new id instead.
func TestOpenRecoversTheIDOfItsOwnState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	own := filepath.Join(dir, ".cadence", "state.db")
	seed := func(target string) string {
		t.Helper()
		s, err := Open(ctx, dir, target)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		now := time.Now()
		err = s.Update(ctx, func(tx *checkpoint.Tx) error {
			return tx.CreateRun(checkpoint.NewRun(checkpoint.Run{ID: "r1", WorkflowPath: "w.yaml",
				WorkflowSHA256: strings.Repeat("0", 64), WorkflowYAML: []byte("version: 1\n")}, now), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		return s.Project()
	}
	first := seed(own)
	if err := os.Remove(Path(dir)); err != nil {
		t.Fatal(err)
	}

	ro, err := OpenReadOnly(ctx, dir, own)
	if err != nil {
		t.Fatal(err)
	}
	if ro.Project() != first {
		t.Errorf("read-only open without the id file reads project %q, want the state's %q", ro.Project(), first)
	}
	ro.Close()
	if _, err := os.Stat(Path(dir)); !os.IsNotExist(err) {
		t.Errorf("a read-only open wrote the id file: %v", err)
	}

	s, err := Open(ctx, dir, own)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := Read(dir); err != nil || got != first || s.Project() != first {
		t.Errorf("after the id file was lost, the id is %q (%v), the store's %q; want %q back", got, err, s.Project(), first)
	}

	shared := filepath.Join(t.TempDir(), "shared.db")
	if err := os.Remove(Path(dir)); err != nil {
		t.Fatal(err)
	}
	if second := seed(shared); second == first {
		t.Errorf("a state named by --state gave back the id %q of the project's own state", second)
	}
}
