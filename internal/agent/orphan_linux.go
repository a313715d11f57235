//go:build linux

package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// KillOrphanGroup kills what is left of an agent's process group after
// cadence itself was killed, and waits until it is gone.
//
// The parent-death signal reaches only the process cadence started, the
// group leader; what that process started survives in the group. Codex's
// npm launcher, for one, is a Node script whose native child keeps running
// and keeps its thread open ("thread … already has an active writer"), so a
// resumed attempt cannot continue the session until it is killed. Because
// the leader may be gone, the group is found by scanning /proc for members
// of group pgid, and is killed only if one of them carries envKV (such as
// "CADENCE_IDEMPOTENCY_KEY=RUN/STEP") in its environment, so that a reused
// group id of an unrelated process is never touched.
//
// It reports whether a group was found and killed. It returns an error only
// when /proc cannot be read or ctx ends before the group is gone.
func KillOrphanGroup(ctx context.Context, pgid int, envKV string) (bool, error) {
	if pgid <= 0 || envKV == "" {
		return false, nil
	}
	members, err := groupMembers(pgid)
	if err != nil {
		return false, err
	}
	ours := false
	for _, pid := range members {
		if hasEnv(pid, envKV) {
			ours = true
			break
		}
	}
	if !ours {
		return false, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return false, fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left, err := groupMembers(pgid)
		if err != nil {
			return true, err
		}
		if len(left) == 0 {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("process group %d still has %d processes: %w", pgid, len(left), ctx.Err())
		case <-tick.C:
		}
	}
}

// groupMembers lists the live (not zombie) processes of group pgid.
func groupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		state, pgrp, ok := parseStat(stat)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			out = append(out, pid)
		}
	}
	return out, nil
}

// parseStat reads the state and the process group from /proc/PID/stat:
// "PID (COMM) STATE PPID PGRP …", where COMM may itself hold spaces and
// parentheses.
func parseStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(fields[2]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], pgrp, true
}

// hasEnv reports whether process pid's environment holds exactly kv.
func hasEnv(pid int, kv string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if string(entry) == kv {
			return true
		}
	}
	return false
}
