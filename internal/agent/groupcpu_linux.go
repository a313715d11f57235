//go:build linux

package agent

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ, which
// Linux reports as 100 per second on every architecture).
const clockTick = 10 * time.Millisecond

// groupCPU measures the CPU time used by an agent's processes: the members
// of its process group and every descendant of its first process, so that
// a tool that put itself in a session of its own (a detached child of a
// Node program) still counts as the agent's work. A process's time
// includes that of the children it has reaped.
type groupCPU struct {
	root int            // the agent's first process, which leads its group
	last map[int]uint64 // clock ticks per pid at the previous sample
}

func newGroupCPU(root int) *groupCPU {
	return &groupCPU{root: root, last: map[int]uint64{}}
}

// procStat is what groupCPU reads from one /proc/PID/stat.
type procStat struct {
	ppid, pgrp int
	ticks      uint64 // utime + stime + cutime + cstime
}

// sample returns the CPU time the agent's processes used since the
// previous call (since they started, for the first call and for a process
// first seen now). Processes that vanish between reads are skipped.
func (g *groupCPU) sample() time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	stats := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if st, ok := parseProcStat(b); ok {
			stats[pid] = st
		}
	}
	var used uint64
	now := make(map[int]uint64, len(g.last))
	for pid, st := range stats {
		if st.pgrp != g.root && !descends(stats, pid, g.root) {
			continue
		}
		now[pid] = st.ticks
		if prev, ok := g.last[pid]; !ok {
			used += st.ticks
		} else if st.ticks > prev {
			used += st.ticks - prev
		}
	}
	g.last = now
	return time.Duration(used) * clockTick
}

// descends reports whether pid is root or one of its descendants. The walk
// up the parents is bounded, so a cycle (pids reused between reads) cannot
// hang it.
func descends(stats map[int]procStat, pid, root int) bool {
	for range 64 {
		if pid == root {
			return true
		}
		st, ok := stats[pid]
		if !ok || st.ppid <= 1 {
			return false
		}
		pid = st.ppid
	}
	return false
}

// parseProcStat reads the parent, the process group and the CPU times from
// the text of /proc/PID/stat. The command name, in parentheses, may hold
// spaces and parentheses itself, so fields are counted after its last ')'.
func parseProcStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// Fields from 3 (state) on; utime..cstime are fields 14..17.
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 {
		return procStat{}, false
	}
	num := func(k int) uint64 {
		n, _ := strconv.ParseUint(string(f[k-3]), 10, 64)
		return n
	}
	return procStat{
		ppid:  int(num(4)),
		pgrp:  int(num(5)),
		ticks: num(14) + num(15) + num(16) + num(17),
	}, true
}

// cpuAware reports whether idle detection can see CPU use here.
const cpuAware = true

// since makes the next sample count only what pid uses from now on: a
// supervisor that served earlier attempts carries their CPU time (its
// own, and that of the programs it reaped).
func (g *groupCPU) since(pid int) {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if st, ok := parseProcStat(b); ok {
			g.last[pid] = st.ticks
		}
	}
}
