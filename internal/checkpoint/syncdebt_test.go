package checkpoint

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/powercut"
)

// syncCaseEnv names what the synced-next helper does after its commit.
const syncCaseEnv = "CHECKPOINT_TEST_SYNC_CASE"

// TestUpdateSyncedByNextAcrossACut commits a run with UpdateSyncedByNext
// in a process on the power-cut filesystem, kills the process, cuts the
// power and reads what survived. Alone, the commit is lost: it cost no
// fsync. The commit of a start (UpdateBeforeStart) after it, the store's
// bound passing, and the store's Close each make it durable.
func TestUpdateSyncedByNextAcrossACut(t *testing.T) {
	if err := powercut.Available(); err != nil {
		t.Fatalf("this test needs a FUSE filesystem, and this machine cannot mount one: %v", err)
	}
	for _, model := range []powercut.Model{powercut.POSIX, powercut.Ext4} {
		for _, tt := range []struct {
			name string
			want []string // the runs that survive the cut
		}{
			{name: "alone", want: []string{"base"}},
			{name: "then-start", want: []string{"base", "next", "start"}},
			{name: "bound", want: []string{"base", "next"}},
			{name: "close", want: []string{"base", "next"}},
		} {
			t.Run(model.String()+"/"+tt.name, func(t *testing.T) {
				backing, mnt := t.TempDir(), t.TempDir()
				f, err := powercut.Mount(backing, mnt, model)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := f.Unmount(); err != nil {
						t.Error(err)
					}
				})
				path := filepath.Join(f.Dir(), "state.db")
				if out, err := helperRun("synced-next", path, tt.name); !strings.Contains(out, "committed") {
					t.Fatalf("the helper did not commit: %v\n%s", err, out)
				}
				if err := f.Cut(); err != nil {
					t.Fatal(err)
				}
				out, err := helperRun("runs", path, "")
				if err != nil {
					t.Fatalf("read the runs after the cut: %v\n%s", err, out)
				}
				if got := strings.Fields(out); !slices.Equal(got, tt.want) {
					t.Errorf("after the cut the runs are %v, want %v", got, tt.want)
				}
			})
		}
	}
}

// helperRun runs the test binary as the helper mode on path, with the
// case for synced-next, to its end, and returns what it printed.
func helperRun(mode, path, syncCase string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPathEnv+"="+path, syncCaseEnv+"="+syncCase)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	return string(out), err
}

// runSyncedNextHelper commits run "base" at FULL and run "next" with
// UpdateSyncedByNext, then does what the case says, and dies by SIGKILL:
// nothing else is closed or synced.
func runSyncedNextHelper(path, syncCase string) error {
	ctx := context.Background()
	opt := defaultOptions()
	if syncCase != "bound" {
		opt.syncBound = time.Hour // only what the case does syncs
	} else {
		opt.syncBound = time.Millisecond
	}
	s, err := open(ctx, path, opt)
	if err != nil {
		return err
	}
	create := func(id string) func(tx *Tx) error {
		return func(tx *Tx) error { return tx.CreateRun(sampleRun(id, time.Now()), nil) }
	}
	if err := s.Update(ctx, create("base")); err != nil {
		return err
	}
	if err := s.UpdateSyncedByNext(ctx, create("next")); err != nil {
		return err
	}
	switch syncCase {
	case "alone":
	case "then-start":
		if err := s.UpdateBeforeStart(ctx, create("start")); err != nil {
			return err
		}
	case "bound":
		deadline := time.Now().Add(10 * time.Second)
		for s.debt.owing() {
			if time.Now().After(deadline) {
				return fmt.Errorf("the commit is still owed after 10 s, with a bound of %s", opt.syncBound)
			}
			time.Sleep(time.Millisecond)
		}
	case "close":
		if err := s.Close(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown case %q", syncCase)
	}
	fmt.Println("committed")
	_ = os.Stdout.Sync()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// printRuns prints the ids of the runs in the database at path.
func printRuns(path string) error {
	s, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.View(context.Background(), func(tx *Tx) error {
		runs, err := tx.Runs()
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(runs))
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		fmt.Println(strings.Join(ids, " "))
		return nil
	})
}

// TestSyncDebt drives the bookkeeping of UpdateSyncedByNext's commits
// through the timer's function, called at chosen moments: it pays only
// what no commit that waited for the disk has paid, and only once the
// oldest commit owed is as old as the bound.
func TestSyncDebt(t *testing.T) {
	for _, tt := range []struct {
		name  string
		steps func(d *syncDebt)
		pays  int
		owing bool
	}{
		{name: "paid by a start before the timer looks", steps: func(d *syncDebt) {
			d.owe()
			d.paid(d.seen())
			d.due()
		}, pays: 0},
		{name: "younger than the bound: the timer looks again later", steps: func(d *syncDebt) {
			d.owe()
			d.due()
		}, pays: 0, owing: true},
		{name: "as old as the bound: paid", steps: func(d *syncDebt) {
			d.owe()
			d.since = time.Now().Add(-2 * d.bound)
			d.due()
		}, pays: 1},
		{name: "a start that began before the commit does not pay it", steps: func(d *syncDebt) {
			before := d.seen()
			d.owe()
			d.paid(before)
			d.since = time.Now().Add(-2 * d.bound)
			d.due()
		}, pays: 1},
		{name: "close pays what is owed", steps: func(d *syncDebt) {
			d.owe()
			d.owe()
			if err := d.close(); err != nil {
				t.Fatal(err)
			}
		}, pays: 1},
		{name: "close owes nothing after a start", steps: func(d *syncDebt) {
			d.owe()
			d.paid(d.seen())
			if err := d.close(); err != nil {
				t.Fatal(err)
			}
		}, pays: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pays := 0
			d := &syncDebt{bound: time.Hour, pay: func() error { pays++; return nil }}
			defer d.close()
			tt.steps(d)
			if pays != tt.pays {
				t.Errorf("paid %d times, want %d", pays, tt.pays)
			}
			if got := d.owing(); got != tt.owing {
				t.Errorf("owing %v, want %v", got, tt.owing)
			}
		})
	}
}

// A state file reached through a symbolic link has its write-ahead log
// beside the file the link names: that is the log syncWAL syncs.
func TestSyncWALFollowsALink(t *testing.T) {
	ctx := context.Background()
	real := filepath.Join(t.TempDir(), "state.db")
	link := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, real)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	s, err = open(ctx, link, options{busyTimeout: DefaultBusyTimeout, syncBound: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.UpdateSyncedByNext(ctx, func(tx *Tx) error { return tx.CreateRun(sampleRun("r1", t0), nil) }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(real + "-wal"); err != nil {
		t.Fatalf("no log beside the file the link names: %v", err)
	}
	if got := walPath(link); got != real+"-wal" {
		t.Errorf("walPath(%s) = %s, want %s", link, got, real+"-wal")
	}
	if !s.debt.owing() {
		t.Fatal("the commit is not owed")
	}
	if err := s.debt.settle(); err != nil {
		t.Fatal(err)
	}
	if s.debt.owing() {
		t.Error("still owed after settle")
	}
}
