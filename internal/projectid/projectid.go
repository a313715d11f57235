// Package projectid gives a project its identity on a shared state. Runs
// of several projects may live in one PostgreSQL database, or one SQLite
// file named by --state; each run records its project's id, and every
// command reads and changes only its own project's rows.
//
// The id is the one line of .cadence/project, written once (by `cadence
// init`, or by the first command that opens the state for writing) and
// meant to be committed with the workflow: a worker on another machine
// with a checkout of the same repository is then the same project. A
// person may write a readable name there instead before the first run
// (letters, digits, '.', '_' and '-', at most 64 characters); two
// checkouts that must be different projects on one state need different
// ids, so a copied directory should get a new one.
package projectid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// File is the name of the id file under .cadence/.
const File = "project"

// maxFile bounds what Read reads: an id is short, and a huge file there
// is a mistake to report, not to load.
const maxFile = 4096

var valid = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Path is the id file of the project in dir.
func Path(dir string) string { return filepath.Join(dir, checkpoint.CadenceDir, File) }

// Read returns the id of the project in dir, or "" when it has none yet
// (no .cadence/project). A file that holds no valid id is an error that
// names it.
func Read(dir string) (string, error) {
	path := Path(dir)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the project id: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return "", fmt.Errorf("read the project id %s: %w", path, err)
	}
	if len(buf) > maxFile {
		return "", fmt.Errorf("the project id file %s is larger than %d bytes: it should hold one id on one line", path, maxFile)
	}
	id := strings.TrimSpace(string(buf))
	if !valid.MatchString(id) {
		return "", fmt.Errorf("the project id file %s holds %q, not an id: one line of letters, digits, '.', '_' or '-' "+
			"(at most 64, starting with a letter or digit); delete the file to get a new id", path, clip(id))
	}
	return id, nil
}

// Ensure returns the id of the project in dir, creating .cadence/project
// with a new random id when there is none. The file is written under a
// temporary name, fsynced, and linked into place only if no file is there
// yet, so two processes creating it at once agree on one id (the loser
// reads the winner's).
func Ensure(dir string) (string, error) {
	id, err := Read(dir)
	if err != nil || id != "" {
		return id, err
	}
	id, err = newID()
	if err != nil {
		return "", err
	}
	path := Path(dir)
	if err := createOnce(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("write the project id %s: %w", path, err)
	}
	return Read(dir)
}

// createOnce writes data to path unless a file is there already (which
// is then left as it is).
func createOnce(path string, data []byte) error {
	cdir := filepath.Dir(path)
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(cdir, ".project-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return checkpoint.SyncDir(cdir)
}

// newID is 16 random hex digits, prefixed so that it reads as a project.
func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make a project id: %w", err)
	}
	return "p-" + hex.EncodeToString(b[:]), nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Open opens the state database target (as checkpoint.Open) for the
// project in dir, confined to that project's rows (Store.SetProject),
// giving the project an id first if it has none: a new one, or, when
// target is the project's own .cadence/state.db and its runs are all of
// one project, that project's (its id file was deleted, or never made
// it into a copy of the directory), so that the runs are not lost to it.
func Open(ctx context.Context, dir, target string) (*checkpoint.Store, error) {
	store, err := checkpoint.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	err = recoverID(ctx, store, dir, target)
	var id string
	if err == nil {
		id, err = Ensure(dir)
	}
	if err == nil {
		err = store.SetProject(ctx, id)
	}
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	return store, nil
}

// recoverID writes the id ownStateProject finds, when the project has
// no id file.
func recoverID(ctx context.Context, store *checkpoint.Store, dir, target string) error {
	if id, err := Read(dir); err != nil || id != "" {
		return err
	}
	id, err := ownStateProject(ctx, store, dir, target)
	if err != nil || id == "" {
		return err
	}
	if err := createOnce(Path(dir), []byte(id+"\n")); err != nil {
		return fmt.Errorf("write the project id %s: %w", Path(dir), err)
	}
	return nil
}

// ownStateProject returns the id of the one project that has runs in
// store, when target is the project's own .cadence/state.db; "" when it
// is another state, or has no runs, or runs of several projects.
func ownStateProject(ctx context.Context, store *checkpoint.Store, dir, target string) (string, error) {
	own, err1 := filepath.Abs(filepath.Join(dir, checkpoint.CadenceDir, "state.db"))
	abs, err2 := filepath.Abs(target)
	if err1 != nil || err2 != nil || own != abs {
		return "", nil
	}
	ids, err := store.Projects(ctx)
	if err != nil || len(ids) != 1 {
		return "", err
	}
	return ids[0], nil
}

// OpenReadOnly opens the state database target (as
// checkpoint.OpenReadOnly) for the project in dir, confined to that
// project's rows. It writes nothing: a project without an id file reads
// the runs of its own state file when they are one project's (as Open
// would recover that id), else the rows written before runs recorded
// their project.
func OpenReadOnly(ctx context.Context, dir, target string) (*checkpoint.Store, error) {
	store, err := checkpoint.OpenReadOnly(ctx, target)
	if err != nil {
		return nil, err
	}
	id, err := Read(dir)
	if err == nil && id == "" {
		id, err = ownStateProject(ctx, store, dir, target)
	}
	if err == nil {
		err = store.SetProject(ctx, id)
	}
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	return store, nil
}
