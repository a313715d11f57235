package steps

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// BenchmarkCadenceDurability counts what a step costs in durability: on
// SQLite the fsync and fdatasync calls of `cadence run` (its process and
// every child, traced by strace -f), in all and by kind of file; on PostgreSQL the transactions the
// server committed for it (pg_stat_database), each per step of a chain of
// BENCH_STEPS command steps. Wall time under strace is not reported: the
// tracing slows every system call.
func BenchmarkCadenceDurability(b *testing.B) {
	n := size(b, "BENCH_STEPS", defaultSteps)
	bin := cadence(b)
	b.Run("sqlite", func(b *testing.B) {
		strace, err := exec.LookPath("strace")
		if err != nil {
			b.Fatal("strace not found (Debian: apt-get install -y strace; make bench-steps installs it)")
		}
		syncs := map[string]int{}
		for b.Loop() {
			dir := project(b, chainWorkflow(n, trueCmd), 0)
			trace := filepath.Join(scratchDir(b), "strace.txt")
			run := command(b.Context(), bin, "", nil, "run", "--quiet", dir)
			run.Args = append([]string{strace, "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-e", "signal=none", "-o", trace}, run.Args...)
			run.Path = strace
			runCadence(b, run, 0)
			calls, err := syncsByFile(trace)
			if err != nil {
				b.Fatal(err)
			}
			for file, k := range calls {
				syncs[fileKind(file)] += k
				syncs["all"] += k
			}
		}
		for kind, k := range syncs {
			unit := "fsyncs/step"
			if kind != "all" {
				unit = kind + "-fsyncs/step"
			}
			b.ReportMetric(float64(k)/float64(b.N)/float64(n), unit)
		}
	})
	b.Run("postgres", func(b *testing.B) {
		c := postgres(b)
		var commits int64
		for b.Loop() {
			url, name := c.database(b)
			before := c.commits(b, name)
			runCadence(b, command(b.Context(), bin, url, nil, "run", "--quiet", project(b, chainWorkflow(n, trueCmd), 0)), 0)
			commits += c.commits(b, name) - before
		}
		b.ReportMetric(float64(commits)/float64(b.N)/float64(n), "commits/step")
	})
}

// syncCall is an fsync or fdatasync call in the output of strace -y,
// which names the file of each descriptor:
//
//	9121  fsync(9</p/.cadence/state.db-wal>) = 0
//	9122  fsync(12</p/.cadence/handoffs/RUN> <unfinished ...>
var syncCall = regexp.MustCompile(`\b(?:fsync|fdatasync)\(\d+<([^>]*)>`)

// syncsByFile counts the fsync and fdatasync calls of an strace -y output
// by file. A call interrupted by another thread's is counted once, at its
// start (the "<... fsync resumed>" line names no file).
func syncsByFile(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := syncCall.FindStringSubmatch(sc.Text()); m != nil {
			counts[m[1]]++
		}
	}
	return counts, sc.Err()
}

// fileKind says what an fsynced file is to cadence: wal (SQLite's
// write-ahead log: the commits), db (the database file and its rollback
// journal: checkpoints and schema), dir (a directory, after a rename into
// it), or file (a file cadence writes to a temporary name and renames).
func fileKind(path string) string {
	switch {
	case strings.HasSuffix(path, "-wal"):
		return "wal"
	case strings.HasSuffix(path, ".db"), strings.HasSuffix(path, "-journal"), strings.HasSuffix(path, "-shm"):
		return "db"
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return "dir"
	}
	return "file"
}
