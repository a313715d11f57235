package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// dirEntries lists the names in dir, to catch leftover temporary files.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	tests := []struct {
		name     string
		existing []byte // nil: no file before
		data     []byte
		perm     os.FileMode
	}{
		{"new file in new directories", nil, []byte(`{"ok":true}`), 0o644},
		{"replaces a longer file", bytes.Repeat([]byte("old "), 1000), []byte("new"), 0o600},
		{"empty data", []byte("something"), []byte{}, 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "handoffs", "run-1")
			path := filepath.Join(dir, "plan.json")
			if tt.existing != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tt.existing, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteFileAtomic(path, tt.data, tt.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.data) {
				t.Errorf("content %q, want %q", got, tt.data)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != tt.perm {
				t.Errorf("mode %v, want %v", info.Mode().Perm(), tt.perm)
			}
			if names := dirEntries(t, dir); len(names) != 1 || names[0] != "plan.json" {
				t.Errorf("directory holds %v, want only plan.json", names)
			}
		})
	}
}

// A reader racing with repeated replacements sees one whole version or the
// other, never a mix or a truncated file.
func TestWriteFileAtomicReadersSeeWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	versions := [][]byte{bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 128<<10)}
	if err := WriteFileAtomic(path, versions[0], 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var torn, reads int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(path)
			reads++
			if err != nil || !(bytes.Equal(got, versions[0]) || bytes.Equal(got, versions[1])) {
				torn++
			}
		}
	}()
	for i := range 40 {
		if err := WriteFileAtomic(path, versions[i%2], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if torn > 0 {
		t.Fatalf("%d of %d reads saw a partial or missing file", torn, reads)
	}
	if names := dirEntries(t, filepath.Dir(path)); len(names) != 1 {
		t.Fatalf("directory holds %v, want only out.json", names)
	}
}

func TestWriteFileAtomicFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("a file where a directory should be"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The parent "directory" is a file: creating it must fail cleanly.
	if err := WriteFileAtomic(filepath.Join(blocker, "x.json"), []byte("{}"), 0o644); err == nil {
		t.Fatal("wrote under a regular file")
	}
	// The target is a directory: the rename fails and the temp file goes.
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(target, []byte("{}"), 0o644); err == nil {
		t.Fatal("replaced a directory with a file")
	}
	names := dirEntries(t, dir)
	if len(names) != 2 {
		t.Fatalf("directory holds %v, want only blocker and target", names)
	}
}

func TestCreateAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "attempts", "run", "plan")
	path := filepath.Join(dir, "1.out")

	// Aborted: nothing appears, the temp file is gone.
	f, err := CreateAtomic(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("partial output")); err != nil {
		t.Fatal(err)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Fatalf("after Abort the directory holds %v", names)
	}

	// Committed: streamed chunks appear whole at the path, and only then.
	f, err = CreateAtomic(path, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort() // no-op after Commit
	for _, chunk := range []string{"line 1\n", "line 2\n", "stderr: done\n"} {
		if _, err := f.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the final path exists before Commit (%v)", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "line 1\nline 2\nstderr: done\n" {
		t.Fatalf("committed content %q (%v)", got, err)
	}
	if err := f.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v, want nil", err)
	}
	if err := f.Commit(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Commit: %v, want os.ErrClosed", err)
	}
	if _, err := f.Write([]byte("late")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Commit: %v, want os.ErrClosed", err)
	}
	if names := dirEntries(t, dir); len(names) != 1 || names[0] != "1.out" {
		t.Errorf("directory holds %v, want only 1.out", names)
	}
}

func TestCreateAtomicMakesMissingDirectories(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "c", "f.json")
	if err := WriteFileAtomic(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{}" {
		t.Fatalf("read back %q, %v", b, err)
	}
	// Again into the existing directories.
	if err := WriteFileAtomic(path, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file where a directory should be is an error, not a panic.
	blocker := filepath.Join(root, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(blocker, "x", "f.json"), nil, 0o644); err == nil {
		t.Fatal("writing below a regular file succeeded")
	}
}

// A file made with CreateAtomicNoSync is published whole at Commit, and
// never half: before Commit and after Abort nothing is at the path.
func TestCreateAtomicNoSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "1.out")
	f, err := CreateAtomicNoSync(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("transcript")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the file is at its path before Commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "transcript" {
		t.Fatalf("after Commit: %q, %v", b, err)
	}
	g, err := CreateAtomicNoSync(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write([]byte("other")); err != nil {
		t.Fatal(err)
	}
	if err := g.Abort(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "transcript" {
		t.Errorf("an aborted file replaced the published one: %q", b)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// WriteFileAtomicNoSync publishes all of the data or nothing, replaces
// what was at the path, creates the directories, and leaves no temporary
// file; a path below a regular file is an error.
func TestWriteFileAtomicNoSync(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "handoffs", "r1", "plan.json")
	for _, data := range []string{`{"n": 1}`, `{"n": 22}`, ""} {
		if err := WriteFileAtomicNoSync(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || string(b) != data {
			t.Fatalf("read back %q, %v; want %q", b, err, data)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
			t.Fatalf("temporary files left: %v", entries)
		}
	}
	blocker := filepath.Join(root, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomicNoSync(filepath.Join(blocker, "x.json"), []byte("{}"), 0o644); err == nil {
		t.Fatal("writing below a regular file succeeded")
	}
}
