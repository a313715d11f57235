package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/history"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/*.inspect.golden from this build")

// stillClock is a clock that stands still except across a wait: After
// moves it by the wait and fires at once. Its readings depend only on the
// waits the run takes, never on how often the run reads the time, so a
// run on it is recorded with the same timestamps by any build that takes
// the same decisions.
type stillClock struct {
	mu   sync.Mutex
	wall time.Time
}

func (c *stillClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *stillClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.wall = c.wall.Add(d)
	}
	ch := make(chan time.Time, 1)
	ch <- c.wall
	return ch
}

// What differs between two runs of the same example whatever the build:
// the run id's random suffix, process ids, measured durations and the
// absolute paths of the temporary project.
var (
	goldenRunID   = regexp.MustCompile(`20260501-120000-[0-9a-f]{6}`)
	goldenPID     = regexp.MustCompile(`"pid": [0-9]+`)
	goldenElapsed = regexp.MustCompile(`"(elapsed_s|duration_s|seconds)": [0-9.e-]+`)
	goldenUUID    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	goldenTime    = regexp.MustCompile(`20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z`)
	// A usage limit's reset is the simulated agent's wall clock plus its
	// retry_after: the wait to it, and what the agent reported, are the
	// distance from the still clock to the real one.
	goldenLimitWait  = regexp.MustCompile(`"(delay_ms|retry_after_ms)": [0-9]+`)
	goldenRetryAfter = regexp.MustCompile(`\(retry after [0-9.]+m?s\)`)
)

// normalizeGolden replaces what differs between two runs of one example
// whatever the build by stable stand-ins. Session ids are numbered in
// order of first appearance. Times on the still clock stay as they are;
// a time on the real clock (after a usage limit's wait moved the still
// clock to the agent's reset) is written as its distance from the first
// such time.
func normalizeGolden(b []byte, dir string, base time.Time) []byte {
	b = goldenRunID.ReplaceAll(b, []byte("RUN"))
	b = goldenPID.ReplaceAll(b, []byte(`"pid": 0`))
	b = goldenElapsed.ReplaceAll(b, []byte(`"$1": 0`))
	b = bytes.ReplaceAll(b, []byte(dir), []byte("DIR"))
	sessions := map[string]string{}
	b = goldenUUID.ReplaceAllFunc(b, func(m []byte) []byte {
		if _, ok := sessions[string(m)]; !ok {
			sessions[string(m)] = fmt.Sprintf("SESSION-%d", len(sessions)+1)
		}
		return []byte(sessions[string(m)])
	})
	var wall time.Time
	for _, m := range goldenTime.FindAll(b, -1) {
		t, err := time.Parse(time.RFC3339Nano, string(m))
		if err == nil && t.Sub(base) > 24*time.Hour && (wall.IsZero() || t.Before(wall)) {
			wall = t
		}
	}
	b = goldenTime.ReplaceAllFunc(b, func(m []byte) []byte {
		t, err := time.Parse(time.RFC3339Nano, string(m))
		if err != nil || wall.IsZero() || t.Before(wall) {
			return m
		}
		return []byte("WALL+" + t.Sub(wall).String())
	})
	if !wall.IsZero() {
		b = goldenRetryAfter.ReplaceAll(b, []byte("(retry after LIMIT)"))
		b = goldenLimitWait.ReplaceAllFunc(b, func(m []byte) []byte {
			var name string
			var n int64
			if _, err := fmt.Sscanf(string(m), "%q: %d", &name, &n); err == nil && n < 60_000 && name == "delay_ms" {
				return m // a backoff the retry policy drew
			}
			return []byte(fmt.Sprintf("%q: %q", name, "LIMIT"))
		})
	}
	return b
}

// TestInspectJSONGolden runs each bundled example to its end on a clock
// that stands still and compares `inspect --json` of the run with a golden
// file: what a run records and how inspect reports it stay the same bytes
// whatever is changed inside the run loop.
func TestInspectJSONGolden(t *testing.T) {
	for _, ex := range []string{"demo", "checks", "map"} {
		t.Run(ex, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join("..", "..", "examples", ex)
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			// A copy of an example carries no state of a run made in place.
			_ = filepath.WalkDir(filepath.Join(dir, CadenceDir), func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && path != filepath.Join(dir, CadenceDir) {
					switch d.Name() {
					case "handoffs", "attempts", "failed_handoffs", "worktrees":
						_ = os.RemoveAll(path)
						return filepath.SkipDir
					}
				}
				if err == nil && !d.IsDir() && (filepath.Ext(path) == ".db" || filepath.Base(path) == "lock") {
					_ = os.Remove(path)
				}
				return nil
			})
			start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			clock := &stillClock{wall: start}
			res, err := Run(context.Background(), Options{Dir: dir, SelfExe: selfExe(t), Clock: clock,
				Rand: func() float64 { return 0.5 }, Env: append(os.Environ(), "GORACE=atexit_sleep_ms=0")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusSucceeded {
				t.Fatalf("example %s: %+v", ex, res)
			}
			rep, err := history.Inspect(context.Background(), dir, "", "", false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = normalizeGolden(got, dir, start)
			if ex == "map" {
				// Its items run at once, and the clock moves when any of
				// them waits: which of them a wait moved depends on how
				// they interleave. What is compared is everything but when.
				got = goldenTime.ReplaceAll(got, []byte("TIME"))
			}
			golden := filepath.Join("testdata", ex+".inspect.golden")
			if *updateGolden {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(got, '\n'), want) {
				t.Errorf("inspect --json of example %s differs from %s:\n%s", ex, golden, got)
			}
		})
	}
}
