package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPeakRSS runs cadence (built without the race detector) on one
// step whose exec agent streams a Claude Code transcript of 20 MB, 200 MB
// and 1 GiB with a 1 KiB answer, prints 1 GiB of text with max_bytes 2GiB,
// or streams 3 or 9 million empty assistant text events, and reports the peak resident set (VmHWM) of the cadence process
// and of the supervisor between it and the agent, and the rate of the
// whole run. SPEC §15 wants both under 64 MiB whatever the output.
//
//	go test -run '^$' -bench BenchmarkPeakRSS -benchtime 1x ./cmd/cadence/
func BenchmarkPeakRSS(b *testing.B) {
	bin := plainBinary(b)
	cases := []struct {
		name  string
		c     hostileCase
		bytes int64
	}{
		{"claude-stream 20 MB", transcriptCase(20), 20 << 20},
		{"claude-stream 200 MB", transcriptCase(200), 200 << 20},
		{"claude-stream 1 GiB", transcriptCase(1024), 1 << 30},
		{"text 1 GiB, max_bytes 2GiB", hostileCase{mode: "gib", maxBytes: "2GiB", transcriptCap: 64 << 20}, 1 << 30},
		{"claude-stream 3M empty text events", emptyTextCase(3_000_000), 3_000_000 * emptyTextEventBytes},
		{"claude-stream 9M empty text events", emptyTextCase(9_000_000), 9_000_000 * emptyTextEventBytes},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var cadencePeak, superPeak int64
			var elapsed time.Duration
			for b.Loop() {
				dir := b.TempDir()
				writeFiles(b, dir, map[string]string{
					".cadence/workflow.yaml": tc.c.workflow(selfPath(b)),
					"s.json":                 boolSchema,
				})
				start := time.Now()
				code, c, s := runPeaks(b, bin, dir)
				elapsed += time.Since(start)
				if code != 0 {
					b.Fatalf("cadence exited %d", code)
				}
				cadencePeak, superPeak = max(cadencePeak, c), max(superPeak, s)
			}
			b.ReportMetric(float64(cadencePeak)/1024, "cadence-MiB")
			b.ReportMetric(float64(superPeak)/1024, "supervisor-MiB")
			b.ReportMetric(float64(tc.bytes)/1e6/(elapsed.Seconds()/float64(b.N)), "MB/s")
		})
	}
}

// emptyTextEventBytes is the length of one event of emptyTextCase.
const emptyTextEventBytes = 71

// emptyTextCase is n assistant events whose one text block is empty, the
// shape that costs the most per byte of transcript, then the answer.
func emptyTextCase(n int) hostileCase {
	return hostileCase{mode: "emptytext", output: "claude-stream", transcriptCap: 64 << 20,
		extraEnv: map[string]string{"HOSTILE_EVENTS": strconv.Itoa(n)}}
}

func transcriptCase(mib int) hostileCase {
	return hostileCase{mode: "transcript", output: "claude-stream", transcriptCap: 64 << 20,
		extraEnv: map[string]string{"HOSTILE_MIB": strconv.Itoa(mib), "HOSTILE_EVENT_KIB": "64"}}
}

// runPeaks runs `cadence run` on dir and polls the peak resident set of the
// cadence process and of its children (the supervisor of each attempt)
// until it exits.
func runPeaks(tb testing.TB, bin, dir string) (code int, cadenceKiB, supervisorKiB int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--quiet", dir)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "CADENCE_FAILPOINT=")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := cmd.Process.Pid
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		cadenceKiB = max(cadenceKiB, vmHWM(filepath.Join("/proc", itoa(pid), "status")))
		for _, child := range childrenOf(pid) {
			supervisorKiB = max(supervisorKiB, vmHWM(filepath.Join("/proc", itoa(child), "status")))
		}
		select {
		case err := <-done:
			if err != nil {
				tb.Logf("stderr: %s", errb.String())
				return cmd.ProcessState.ExitCode(), cadenceKiB, supervisorKiB
			}
			return 0, cadenceKiB, supervisorKiB
		case <-tick.C:
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// writeFiles writes files (path → content) under dir.
func writeFiles(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
