package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// claimBenchItems is the size of the map step BenchmarkClaim works through.
const claimBenchItems = 2000

// claimBenchTTL outlives any benchmark: no lease expires while it runs.
const claimBenchTTL = time.Hour

// BenchmarkClaim measures how fast K claimers at once work through the
// items of one map step of 2,000 items, each claimer looping as a cadence
// process does with an item: claim it (Store.ClaimItem, the measured
// latency), mark it running and then succeeded (two commits under its
// lease, as an attempt's start and outcome are), and release its lease,
// until no item is left. No agent runs: what is left is the cost of the
// claim path and of the item's commits, and how they scale with claimers.
//
// On PostgreSQL each claimer has a *Store of its own, as separate
// processes have; on SQLite they share one, since one process owns the
// file. The test cluster runs with fsync off; SQLite fsyncs each commit
// (synchronous=FULL), so the engines' absolute figures are not a fair
// race, only each engine's scaling with claimers is.
//
// Reported: claim-ms-p50, claim-ms-p99 and claim-ms-max (from the first try of a claim
// to the commit of one that took an item, every retry after a
// serialization failure included), claims/s (items over the wall time of
// the whole loop, commits included), retries/item (transaction runs
// repeated after a conflict, over the four transactions of an item) and
// gave-up/op: how often an Update returned ErrBusy after conflicting
// postgresWriteTries times in a row. The benchmark then calls it again;
// a cadence process cannot: the run process stops on it.
//
//	go test -run '^$' -bench Claim -benchtime 1x ./internal/checkpoint
func BenchmarkClaim(b *testing.B) {
	engines := []struct {
		name string
		// target returns a new, empty database.
		target func(b *testing.B) string
		// ownStores gives each claimer a store of its own.
		ownStores bool
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "state.db") }, false},
		{"postgres", func(b *testing.B) string { return pg.NewDatabase(b) }, true},
	}
	for _, e := range engines {
		for _, claimers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("engine=%s/claimers=%d", e.name, claimers), func(b *testing.B) {
				var all claimStats
				for b.Loop() {
					b.StopTimer()
					stores := openClaimStores(b, e.target(b), claimers, e.ownStores)
					b.StartTimer()
					st, err := claimAll(context.Background(), stores)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					if st.items != claimBenchItems {
						b.Fatalf("%d items done, want %d", st.items, claimBenchItems)
					}
					all.add(st)
					b.StartTimer()
				}
				all.report(b)
			})
		}
	}
}

// openClaimStores opens the stores of the claimers on target, seeded with
// run r, its map step fix running and its items pending: one store per
// claimer when own, else one shared by all.
func openClaimStores(b *testing.B, target string, claimers int, own bool) []*Store {
	b.Helper()
	ctx := context.Background()
	stores := make([]*Store, claimers)
	for i := range stores {
		if i > 0 && !own {
			stores[i] = stores[0]
			continue
		}
		s, err := Open(ctx, target)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := s.Close(); err != nil {
				b.Error(err)
			}
		})
		stores[i] = s
	}
	if err := stores[0].Update(ctx, seedClaimItems); err != nil {
		b.Fatal(err)
	}
	return stores
}

// seedClaimItems creates run r with step fix running and its
// claimBenchItems items pending, as a run has them once they are frozen.
func seedClaimItems(tx *Tx) error {
	step := sampleStep("r", "fix", 0)
	if err := tx.CreateRun(sampleRun("r", t0), []Step{step}); err != nil {
		return err
	}
	step.status = StepRunning
	if err := tx.UpdateStep(step); err != nil {
		return err
	}
	items := make([]Step, claimBenchItems)
	for i := range items {
		items[i] = sampleItem("r", "fix", fmt.Sprintf("k%04d", i+1), i+1)
	}
	return tx.InsertItems(items)
}

// claimStats are the figures of one or more passes over the items.
type claimStats struct {
	items  int
	wall   time.Duration
	claims []time.Duration // the latency of each successful claim
	// retries counts the runs of the transactions' functions beyond the
	// first of each transaction: reruns after a serialization failure,
	// within Update or after it gave up.
	retries int
	// gaveUp counts the Update calls that returned ErrBusy because their
	// transaction conflicted with concurrent writers postgresWriteTries
	// times in a row. The benchmark calls Update again; a cadence
	// process stops (the run) or gives the item up (a worker's claim).
	gaveUp int
}

func (s *claimStats) add(o claimStats) {
	s.items += o.items
	s.wall += o.wall
	s.claims = append(s.claims, o.claims...)
	s.retries += o.retries
	s.gaveUp += o.gaveUp
}

func (s *claimStats) report(b *testing.B) {
	slices.Sort(s.claims)
	b.ReportMetric(msOf(percentile(s.claims, 0.50)), "claim-ms-p50")
	b.ReportMetric(msOf(percentile(s.claims, 0.99)), "claim-ms-p99")
	b.ReportMetric(msOf(percentile(s.claims, 1)), "claim-ms-max")
	b.ReportMetric(float64(s.items)/s.wall.Seconds(), "claims/s")
	b.ReportMetric(float64(s.retries)/float64(s.items), "retries/item")
	b.ReportMetric(float64(s.gaveUp)/float64(b.N), "gave-up/op")
}

// percentile returns the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// claimAll runs one claimer per store until no item is left to claim, and
// returns what they did together.
func claimAll(ctx context.Context, stores []*Store) (claimStats, error) {
	results := make([]claimStats, len(stores))
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range stores {
		wg.Go(func() {
			results[i], errs[i] = claimLoop(ctx, s, fmt.Sprintf("claimer-%d", i))
		})
	}
	wg.Wait()
	total := claimStats{wall: time.Since(start)}
	for _, r := range results {
		r.wall = 0
		total.add(r)
	}
	return total, errors.Join(errs...)
}

// claimBenchGiveUp bounds how often one transaction may give up with
// ErrBusy before the benchmark fails instead of calling it again.
const claimBenchGiveUp = 100

// claimLoop is one claimer: it claims, runs and releases items until
// ClaimItem finds none.
func claimLoop(ctx context.Context, s *Store, name string) (claimStats, error) {
	var st claimStats
	// update is s.Update, counting the reruns of fn, and called again
	// when it gives up on conflicts.
	update := func(ctx context.Context, fn func(tx *Tx) error) error {
		runs := 0
		for {
			err := s.Update(ctx, func(tx *Tx) error {
				runs++
				return fn(tx)
			})
			if !errors.Is(err, ErrBusy) || st.gaveUp >= claimBenchGiveUp {
				st.retries += runs - 1
				return err
			}
			st.gaveUp++
		}
	}
	me := Lease{Owner: name, Host: "bench", PID: 1}
	for {
		start := time.Now()
		l, _, err := s.ClaimItem(WithoutLease(ctx), "r", "fix", me, claimBenchTTL)
		var taken *LeaseHeldError
		if errors.As(err, &taken) {
			continue // another claimer's item, found held: claim again
		}
		if errors.Is(err, ErrNotFound) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("%s: %w", name, err)
		}
		st.claims = append(st.claims, time.Since(start))
		held := WithLease(ctx, l)
		for _, status := range []StepStatus{StepRunning, StepSucceeded} {
			if err := update(held, func(tx *Tx) error { return setUnitStatus(tx, l.Unit(), status) }); err != nil {
				return st, fmt.Errorf("%s: mark %s %s: %w", name, l.ItemKey, status, err)
			}
		}
		if err := update(WithoutLease(ctx), func(tx *Tx) error { return tx.ReleaseLease(l) }); err != nil {
			return st, fmt.Errorf("%s: release %s: %w", name, l.ItemKey, err)
		}
		st.items++
	}
}

// setUnitStatus moves a unit to status, as an attempt's start (running)
// and its outcome (succeeded) do.
func setUnitStatus(tx *Tx, u Unit, status StepStatus) error {
	st, err := tx.Unit(u)
	if err != nil {
		return err
	}
	st.status = status
	st.UpdatedAt = time.Now()
	return tx.UpdateStep(*st)
}
