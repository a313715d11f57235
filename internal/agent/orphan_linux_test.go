//go:build linux

package agent

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts sh as the leader of a new process group, with a child
// that outlives it, and env added to the environment. It returns the group
// id once the child runs.
func startGroup(t *testing.T, env string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & echo started; wait")
	cmd.Env = append(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	buf := make([]byte, 16)
	if n, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "started") {
		t.Fatalf("group did not start: %q %v", buf[:n], err)
	}
	return pgid
}

func TestKillOrphanGroup(t *testing.T) {
	tests := []struct {
		name       string
		env, match string
		wantKilled bool
	}{
		{"leader gone, child carries the key", "CADENCE_IDEMPOTENCY_KEY=r1/plan", "CADENCE_IDEMPOTENCY_KEY=r1/plan", true},
		{"another run's group is left alone", "CADENCE_IDEMPOTENCY_KEY=r2/plan", "CADENCE_IDEMPOTENCY_KEY=r1/plan", false},
		{"a prefix is not a match", "CADENCE_IDEMPOTENCY_KEY=r1/plan2", "CADENCE_IDEMPOTENCY_KEY=r1/plan", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pgid := startGroup(t, tt.env)
			// The parent-death signal kills only the leader.
			if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			killed, err := KillOrphanGroup(ctx, pgid, tt.match)
			if err != nil || killed != tt.wantKilled {
				t.Fatalf("KillOrphanGroup = %v, %v; want %v, nil", killed, err, tt.wantKilled)
			}
			left, err := groupMembers(pgid)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantKilled && len(left) != 0 {
				t.Errorf("processes %v of group %d still run", left, pgid)
			}
			if !tt.wantKilled && len(left) == 0 {
				t.Errorf("the unrelated group %d was killed", pgid)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat  string
		state byte
		pgrp  int
		ok    bool
	}{
		{"123 (codex) S 1 120 120 0 -1", 'S', 120, true},
		{"123 (a) b) (c) Z 1 77 77", 'Z', 77, true},
		{"123 codex S 1 120", 0, 0, false},
		{"123 (x) S 1", 0, 0, false},
	}
	for _, tt := range tests {
		state, pgrp, ok := parseStat([]byte(tt.stat))
		if state != tt.state || pgrp != tt.pgrp || ok != tt.ok {
			t.Errorf("parseStat(%q) = %c %d %v, want %c %d %v", tt.stat, state, pgrp, ok, tt.state, tt.pgrp, tt.ok)
		}
	}
}
