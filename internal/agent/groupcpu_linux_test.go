//go:build linux

package agent

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want procStat
		ok   bool
	}{
		{"plain", "4242 (claude) S 4200 4242 4242 0 -1 4194560 100 0 0 0 150 30 7 3 20 0 12 0 99 0 0",
			procStat{ppid: 4200, pgrp: 4242, ticks: 150 + 30 + 7 + 3}, true},
		{"a name with spaces and parentheses", "77 (node (worker) x) R 70 60 60 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 5 0 0",
			procStat{ppid: 70, pgrp: 60, ticks: 10}, true},
		{"cut short", "77 (sh) S 70 60 60", procStat{}, false},
		{"no name", "garbage", procStat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseProcStat([]byte(tt.stat))
			if ok != tt.ok || got != tt.want {
				t.Fatalf("parseProcStat = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	tests := []struct {
		used, interval time.Duration
		want           bool
	}{
		{0, 100 * time.Millisecond, false},
		{10 * time.Millisecond, 100 * time.Millisecond, true}, // one tick
		{10 * time.Millisecond, 5 * time.Second, false},       // one tick in 5 s: a timer, not work
		{100 * time.Millisecond, 5 * time.Second, true},       // 2% of a core
		{5 * time.Second, 5 * time.Second, true},
	}
	for _, tt := range tests {
		if got := busy(tt.used, tt.interval); got != tt.want {
			t.Errorf("busy(%v, %v) = %v, want %v", tt.used, tt.interval, got, tt.want)
		}
	}
	for _, tt := range []struct{ idle, want time.Duration }{
		{time.Second, 100 * time.Millisecond},
		{2 * time.Second, 200 * time.Millisecond},
		{5 * time.Minute, 5 * time.Second},
	} {
		if got := cpuSampleInterval(tt.idle); got != tt.want {
			t.Errorf("cpuSampleInterval(%v) = %v, want %v", tt.idle, got, tt.want)
		}
	}
}

// TestGroupCPUSeesDescendants: a busy grandchild that left the process
// group is counted; a sleeping one adds nothing.
func TestGroupCPUSeesDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", `setsid sh -c 'i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done' & wait`)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := newGroupCPU(cmd.Process.Pid)
	var used time.Duration
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		used += g.sample()
		if used >= 50*time.Millisecond {
			break
		}
		time.Sleep(20 * time.Millisecond) // sampling period, as the supervisor's ticker
	}
	_ = cmd.Process.Kill()
	_ = signalGroup(cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if used < 50*time.Millisecond {
		t.Fatalf("saw %v of CPU from a busy detached grandchild", used)
	}

	idle := exec.Command("sleep", "5")
	idle.SysProcAttr = sysProcAttr()
	if err := idle.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = idle.Process.Kill(); _ = idle.Wait() }()
	g = newGroupCPU(idle.Process.Pid)
	g.sample()
	time.Sleep(300 * time.Millisecond) // the interval being measured, not a synchronisation
	if got := g.sample(); got != 0 {
		t.Fatalf("a sleeping process used %v", got)
	}
}
