package steps

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCadenceDurability counts what a step costs in durability: on
// SQLite the fsync and fdatasync calls of `cadence run` (its process and
// every child, counted by strace -f), on PostgreSQL the transactions the
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
		var syncs int
		for b.Loop() {
			dir := project(b, chainWorkflow(n, trueCmd), 0)
			summary := filepath.Join(b.TempDir(), "strace.txt")
			run := command(b.Context(), bin, "", nil, "run", "--quiet", dir)
			run.Args = append([]string{strace, "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", summary}, run.Args...)
			run.Path = strace
			runCadence(b, run, 0)
			calls, err := syscallCounts(summary)
			if err != nil {
				b.Fatal(err)
			}
			syncs += calls["fsync"] + calls["fdatasync"]
		}
		b.ReportMetric(float64(syncs)/float64(b.N)/float64(n), "fsyncs/step")
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

// syscallCounts reads the calls column of an `strace -c` summary:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 98.10    0.051018          25      2000           fsync
func syscallCounts(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] == "%" || strings.HasPrefix(fields[0], "-") || fields[len(fields)-1] == "total" {
			continue
		}
		calls, err := strconv.Atoi(fields[3])
		if err != nil {
			return nil, fmt.Errorf("%s: calls of %q: %w", path, sc.Text(), err)
		}
		counts[fields[len(fields)-1]] = calls
	}
	return counts, sc.Err()
}
