package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// gcSetting reads the collector's target and memory limit without
// changing them.
func gcSetting() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func TestLoadGC(t *testing.T) {
	const (
		startPercent = 150
		startLimit   = 1 << 40
	)
	tests := []struct {
		name string
		env  map[string]string
		// phase says the load phase applies its own setting.
		phase bool
	}{
		{"nothing chosen", map[string]string{"HOME": "/h"}, true},
		{"GOGC chosen by the user", map[string]string{"GOGC": "50"}, false},
		{"GOGC off", map[string]string{"GOGC": "off"}, false},
		{"GOMEMLIMIT chosen by the user", map[string]string{"GOMEMLIMIT": "1GiB"}, false},
		{"GOGC set empty", map[string]string{"GOGC": ""}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldPercent := debug.SetGCPercent(startPercent)
			oldLimit := debug.SetMemoryLimit(startLimit)
			t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })

			g := startLoadGC(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			percent, limit := gcSetting()
			if tt.phase && (percent != -1 || limit != loadHeapLimit) {
				t.Errorf("during the load: GC percent %d, limit %d; want off, %d", percent, limit, loadHeapLimit)
			}
			if !tt.phase && (percent != startPercent || limit != startLimit) {
				t.Errorf("during the load: GC percent %d, limit %d; want the user's %d, %d", percent, limit, startPercent, startLimit)
			}
			g.end()
			g.end() // a second call (the command's return after the first attempt) changes nothing
			if percent, limit := gcSetting(); percent != startPercent || limit != startLimit {
				t.Errorf("after the load: GC percent %d, limit %d; want %d, %d restored", percent, limit, startPercent, startLimit)
			}
		})
	}
}

// TestLoadGCEndsOnBigHeap checks that a live heap beyond half the load
// limit ends the phase at the collection that finds it, so a big workflow
// loads under the default target instead of collecting again and again
// against the limit.
func TestLoadGCEndsOnBigHeap(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent) })
	g := startLoadGC(func(string) (string, bool) { return "", false })
	t.Cleanup(g.end)
	live := make([]byte, loadHeapLimit*3/4)
	for i := range live {
		live[i] = byte(i)
	}
	runtime.GC()
	select {
	case <-g.ended():
	case <-time.After(30 * time.Second):
		t.Fatal("the load phase went on after a collection found 24 MiB live")
	}
	if percent, _ := gcSetting(); percent != 100 {
		t.Errorf("GC percent %d after the phase ended; want 100 restored", percent)
	}
	runtime.KeepAlive(live)
}

// TestCheckRestoresGC runs `cadence check` as the whole process would
// (process set, so it loads under the load phase's collector setting)
// on a good and on a bad workflow, and checks that the setting from
// before is back when the command has returned.
func TestCheckRestoresGC(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		code       int
	}{
		{"ready", "version: 1\nsteps:\n  - {id: a, run: [/bin/true]}\n  - {id: b, run: [/bin/true]}\n", exitOK},
		{"mistakes", "version: 1\nsteps:\n  - {id: a, run: [/bin/true], needs: [zz]}\n", exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const (
				startPercent = 150
				startLimit   = 1 << 40
			)
			oldPercent := debug.SetGCPercent(startPercent)
			oldLimit := debug.SetMemoryLimit(startLimit)
			t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, ".cadence"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".cadence", "workflow.yaml"), []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			if code := runEnv([]string{"check", dir}, strings.NewReader(""), &out, &errOut, true); code != tc.code {
				t.Fatalf("check exited %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, &out, &errOut)
			}
			if percent, limit := gcSetting(); percent != startPercent || limit != startLimit {
				t.Errorf("after check: GC percent %d, limit %d; want %d, %d restored", percent, limit, startPercent, startLimit)
			}
		})
	}
}
