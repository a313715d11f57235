package orchestrator

// Shared state (SPEC section 13). When the state database is PostgreSQL,
// cadence processes on several machines work on the same run: the `run`
// (or `resume`) process walks the steps in order, and it and any number of
// `cadence worker` processes run the items of its map steps. They
// coordinate only through the database:
//   - The run is held by a lease (the project lock G7 across machines):
//     a second run or resume of it exits 4 naming the holder.
//   - Each item is claimed under a lease of its own. Its holder renews it;
//     every commit of the item's attempts checks it in the same
//     transaction (checkpoint.WithLease), so a holder that lost it, even
//     one that was stopped and does not know yet, commits nothing more and
//     stops its agent as soon as it notices.
//   - An item whose holder's lease expired is claimed by the next process,
//     which first settles the attempt the holder left running, as a resume
//     does (G5): interrupted and counted, or adopted when its handoff is
//     in the database; the item's session is then continued.
// On SQLite nothing of this runs: one process holds the file lock and
// runs every item itself.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/holder"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// DefaultLeaseTTL is how long a lease lasts without renewal: how soon
// another process takes over the run or an item of a process that died.
// Holders renew at a third of it.
const DefaultLeaseTTL = 30 * time.Second

// DefaultPoll is how often a process with nothing to claim looks again,
// and how soon the run's process sees that other processes finished the
// last items of a map step.
const DefaultPoll = 250 * time.Millisecond

// leases are the leases a process takes on a shared state: on its run
// (G7, with the lock file) and, on PostgreSQL, on the map items it
// claims.
type leases struct {
	store *checkpoint.Store
	log   *slog.Logger
	// id names this process in leases; runLease is the lease it holds on
	// its run (nil until it took it).
	id       identity
	runLease *checkpoint.Lease
	// ttl and every are Options.LeaseTTL and Options.Poll (0: defaults).
	ttl, every time.Duration
}

// identity names this process in the leases it takes (holder.Identity),
// and judges the holders of leases other processes took.
type identity struct{ holder.Identity }

func newIdentity() identity { return identity{holder.Self()} }

// lease returns a lease template naming this process as its holder.
func (id identity) lease() checkpoint.Lease {
	return checkpoint.Lease{Owner: id.Owner, Host: id.Host, PID: id.PID}
}

// gone reports whether the holder of a lease is known to be dead
// (holder.Identity.Gone).
func (id identity) gone(h checkpoint.Lease) bool { return id.Gone(h.Owner, h.PID) }

// local reports whether the holder of a lease ran on this machine, in
// this pid namespace, so that its pids mean the same processes here.
func (id identity) local(h checkpoint.Lease) bool { return id.Local(h.Owner) }

func (ls *leases) shared() bool { return ls.store.Shared() }

func (ls *leases) leaseTTL() time.Duration {
	if ls.ttl > 0 {
		return ls.ttl
	}
	return DefaultLeaseTTL
}

func (ls *leases) poll() time.Duration {
	if ls.every > 0 {
		return ls.every
	}
	return DefaultPoll
}

// takeRun takes the lease of run runID in tx; a live holder is a
// *checkpoint.LeaseHeldError. On a shared database it is the project lock
// across machines; on SQLite it holds the run in the state itself as well
// as by the lock file, so that deleting the lock file does not let a
// second process run the run (G7): a holder on this machine is checked
// live by its pid and start time, one in another pid namespace (a
// container sharing the directory) by its lease's expiry. On SQLite a
// lease that expired while its holder was stopped (a machine asleep) stays
// the holder's until another process takes it (checkpoint.Tx.CheckLease).
func (ls *leases) takeRun(tx *checkpoint.Tx, runID string) error {
	l := ls.id.lease()
	l.RunID = runID
	got, _, err := tx.AcquireLease(l, ls.leaseTTL(), ls.id.gone)
	if err != nil {
		return err
	}
	ls.runLease = &got
	return nil
}

// fenced returns ctx with the run's lease, when the run is held by one:
// every write made with it commits only while the lease is held.
func (ls *leases) fenced(ctx context.Context) context.Context {
	if ls.runLease == nil {
		return ctx
	}
	return checkpoint.WithLease(ctx, *ls.runLease)
}

// holdLease keeps l for as long as ctx lasts, renewing it at a third of
// its time to live. When it is lost (it expired, or another process took
// it), lost is called once with the reason and renewing stops. A renewal
// that fails for another reason (the database restarting, say) is tried
// again at the next tick. release stops renewing and gives the lease up.
func (ls *leases) holdLease(ctx context.Context, l checkpoint.Lease, lost func(error)) (release func()) {
	release, _ = ls.hold(ctx, l, lost)
	return release
}

// hold is holdLease that also returns stop, which only stops renewing:
// for a lease already released in the transaction that ended its step
// (checkpoint.WithEndingLease), where a release would cost a commit to
// change nothing.
func (ls *leases) hold(ctx context.Context, l checkpoint.Lease, lost func(error)) (release, stop func()) {
	ttl := ls.leaseTTL()
	ctx, cancel := context.WithCancel(checkpoint.WithoutLease(ctx))
	var (
		mu   sync.Mutex
		cur  = l
		gone bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var next checkpoint.Lease
			err := ls.store.Update(ctx, func(tx *checkpoint.Tx) (err error) {
				next, err = tx.RenewLease(cur, ttl)
				return err
			})
			switch {
			case err == nil:
				mu.Lock()
				cur = next
				mu.Unlock()
			case errors.Is(err, checkpoint.ErrLeaseLost), errors.Is(err, checkpoint.ErrStateReplaced), errors.Is(err, checkpoint.ErrLockGone):
				mu.Lock()
				gone = true
				mu.Unlock()
				lost(err)
				return
			case ctx.Err() == nil:
				ls.log.Warn("could not renew a lease; trying again", "lease", attempt.UnitLabel(l.Unit()), "err", err)
			}
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	return func() {
		stop()
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return
		}
		err := ls.store.Update(context.Background(), func(tx *checkpoint.Tx) error { return tx.ReleaseLease(cur) })
		if err != nil && !errors.Is(err, checkpoint.ErrLeaseLost) {
			ls.log.Warn("could not release a lease; it expires by itself", "lease", attempt.UnitLabel(l.Unit()), "err", err)
		}
	}, stop
}

// claimed is an item this process claimed, with the lease it holds and
// the previous holder's.
type claimed struct {
	item        *attempt.Item
	lease, prev checkpoint.Lease
	// running, for a step (claimStep), are its attempts recorded running
	// when its lease was taken, read in the lease's transaction; state
	// the step's state for its next attempt, read there too when nothing
	// is left to settle (so nothing changes it before that attempt).
	running []checkpoint.Attempt
	state   *attempt.State
}

// claim takes the next claimable item of map step in, or returns nil
// when there is none now. It claims nothing, and returns a
// *checkpoint.TooManyDeadError, once more of the step's items are dead
// than its max_failures.
func (p *project) claim(ctx context.Context, in *attempt.Instance) (*claimed, error) {
	run := in.Run
	var c claimed
	var err error
	c.lease, c.prev, err = p.store.ClaimItemUnlessDead(checkpoint.WithoutLease(ctx), run.ID, in.StepPath(), p.id.lease(), p.leaseTTL(), in.Step.Map.MaxFailures)
	var tooMany *checkpoint.TooManyDeadError
	if errors.As(err, &tooMany) {
		return nil, err
	}
	var held *checkpoint.LeaseHeldError
	if errors.Is(err, checkpoint.ErrNotFound) || errors.As(err, &held) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim an item of step %s: %w", in.StepPath(), err)
	}
	if err := c.read(ctx, p, in); err != nil {
		return nil, err
	}
	it := c.item
	if c.prev.Owner != "" {
		p.sink.Emit(history.Event{Time: p.now(), Type: history.EventItemTakenOver, RunID: run.ID, Step: in.StepPath(), Item: it.Key,
			Message: fmt.Sprintf("taken over from pid %d on host %s, whose lease expired at %s (lease epoch %d)",
				c.prev.PID, c.prev.Host, c.prev.ExpiresAt.Local().Format("15:04:05.000"), c.lease.Epoch)})
	}
	return &c, nil
}

// read reads, in one transaction after the claim's commit, what claimed
// item c of map step in needs before it runs: its frozen row, the
// attempts its last holder left running and, when there are none, the
// state its next attempt decides from (so that nothing commits to it
// before that attempt: the lease is held). One read instead of three.
func (c *claimed) read(ctx context.Context, p *project, in *attempt.Instance) error {
	u := c.lease.Unit()
	err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		c.item, c.running, c.state = nil, nil, nil
		row, err := tx.Unit(u)
		if err != nil {
			return fmt.Errorf("read %s: %w", attempt.UnitLabel(u), err)
		}
		if c.item, err = itemOf(row); err != nil {
			return err
		}
		p.placeItem(in.WithItem(c.item))
		if c.running, err = runningAttempts(tx, u); err != nil || len(c.running) > 0 {
			return err
		}
		c.state, err = attempt.ReadState(tx, p.attempts, in.WithItem(c.item), row)
		return err
	})
	return err
}

// workItem runs a claimed item under its lease: it first settles an
// attempt that the previous holder left running, then runs the item as a
// single process does, and dead-letters it if it fails. Losing the lease
// stops the item's agent and ends the item here without error: the
// process that took the lease continues it.
func (p *project) workItem(ctx context.Context, in *attempt.Instance, c *claimed) error {
	run := in.Run
	u := c.lease.Unit()
	itemCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release, stop := p.hold(itemCtx, c.lease, func(err error) { cancel(err) })
	ended := false
	defer func() {
		if ended {
			stop()
		} else {
			release()
		}
	}()
	// An item that succeeds gives its lease up in the commit of its
	// success (checkpoint.WithEndingLease), unless work under the lease
	// follows that commit: a worktree's merge.
	endsWithSuccess := in.Step.Map.Workspace != workflow.WorkspaceWorktree
	if endsWithSuccess {
		itemCtx = checkpoint.WithEndingLease(itemCtx, c.lease)
	} else {
		itemCtx = checkpoint.WithLease(itemCtx, c.lease)
	}

	err := p.settleUnit(itemCtx, run, c.running, p.id.local(c.prev))
	if err == nil {
		var res stepResult
		item := in.WithItem(c.item)
		item.State = c.state // nil when settling may have changed it
		res, err = p.runItem(itemCtx, item)
		if err == nil && res == stepFailed {
			err = p.deadLetter(itemCtx, in.WithItem(c.item), "", "")
		}
		if ended = err == nil && res == stepDone && endsWithSuccess; ended {
			// Its success was committed under the lease and released it:
			// a renewal that raced that commit and found the lease gone
			// lost nothing.
			return nil
		}
	}
	cause := context.Cause(itemCtx)
	if errors.Is(cause, checkpoint.ErrLeaseLost) || errors.Is(err, checkpoint.ErrLeaseLost) {
		why := err
		if errors.Is(cause, checkpoint.ErrLeaseLost) {
			why = cause
		}
		p.log.Debug("lost the lease of an item", "item", attempt.UnitLabel(u), "err", why)
		p.sink.Emit(history.Event{Time: p.now(), Type: history.EventLeaseLost, RunID: run.ID, Step: in.StepPath(), Item: u.Item,
			Message: "another process holds it now; its agent was stopped and nothing more of it is recorded here", Error: why.Error()})
		return nil
	}
	return err
}

// settleUnit settles running, the attempts of one unit that a process
// which lost it left running (G5), as a resume settles a crashed run's;
// they are read under the unit's lease (runningAttempts). local says that
// process ran on this machine, so its agent may still be found and
// killed here (G6); one on another machine was stopped by its own
// process when that process noticed it had lost the lease.
func (p *project) settleUnit(ctx context.Context, run *checkpoint.Run, running []checkpoint.Attempt, local bool) error {
	for i := range running {
		if err := p.settleAttempt(ctx, run, &running[i], local); err != nil {
			return err
		}
	}
	return nil
}

// runningAttempts reads the attempts of unit u still recorded running.
func runningAttempts(tx *checkpoint.Tx, u checkpoint.Unit) ([]checkpoint.Attempt, error) {
	all, err := tx.UnitAttempts(u)
	if err != nil {
		return nil, fmt.Errorf("read the attempts of %s: %w", attempt.UnitLabel(u), err)
	}
	var running []checkpoint.Attempt
	for _, a := range all {
		if a.Status() == checkpoint.AttemptRunning {
			running = append(running, a)
		}
	}
	return running, nil
}

// breakDeadLeases ends the item leases of a run whose holders ran on this
// machine and are dead (a process killed with kill -9 and resumed here):
// their items are claimed at once instead of after their leases expire.
func (ls *leases) breakDeadLeases(ctx context.Context, runID string) error {
	return ls.store.Update(checkpoint.WithoutLease(ctx), func(tx *checkpoint.Tx) error {
		held, err := tx.HeldLeases(runID)
		if err != nil {
			return err
		}
		for _, l := range held {
			if l.StepID != "" && ls.id.gone(l) {
				if err := tx.BreakLease(l); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// runItemsShared runs the items of map step ws together with every other
// process working on the run: it claims up to max_parallel items at a
// time, and returns once no item is left unfinished, or once more items
// than max_failures are dead and its own items have ended; then it
// settles the attempts that dead processes left running on items nobody
// claimed again (leftBehind.items).
func (p *project) runItemsShared(ctx context.Context, in *attempt.Instance) error {
	run, ws := in.Run, in.Step
	if err := p.breakDeadLeases(ctx, run.ID); err != nil {
		return fmt.Errorf("end the leases of dead processes of run %s: %w", run.ID, err)
	}
	finished := make(chan error)
	running := 0
	var firstErr error
	wake := ctx.Done()
	for {
		stop := firstErr != nil || ctx.Err() != nil
		for !stop && running < ws.Map.MaxParallel {
			c, err := p.claim(ctx, in)
			var tooMany *checkpoint.TooManyDeadError
			switch {
			case errors.As(err, &tooMany):
				// More items are dead than max_failures: no more are
				// claimed, and the step ends once those running have.
				stop = true
			case err != nil:
				firstErr, stop = err, true
			}
			if c == nil {
				break
			}
			running++
			go func() { finished <- p.workItem(ctx, in, c) }()
		}
		if running == 0 {
			if stop {
				break
			}
			open, err := openItems(ctx, p.store, run.ID, in.StepPath())
			if err != nil {
				firstErr = err
				break
			}
			if open == 0 {
				break
			}
		}
		select {
		case err := <-finished:
			running--
			if err != nil && (firstErr == nil || errors.Is(firstErr, attempt.ErrInterrupted) && !errors.Is(err, attempt.ErrInterrupted)) {
				firstErr = err
			}
		case <-wake:
			wake = nil
		case <-time.After(p.poll()):
		}
	}
	if firstErr == nil && ctx.Err() != nil {
		firstErr = attempt.ErrInterrupted
	}
	if firstErr == nil {
		// The step ends now, failed when too many items are dead: an
		// attempt a dead process left running on an item nobody claimed
		// again is settled here, or never.
		firstErr = leftBehind{p}.items(ctx, in)
	}
	return firstErr
}

// leftBehind settles the attempts that dead processes left running on
// the units (steps and items) of a shared run that no process will claim
// again, because the step or the run they belong to ends without them.
type leftBehind struct{ p *project }

// items settles, as map step in ends, the attempts its items still have
// recorded running while no live process holds them: those a process that
// died left behind, on items that no process claimed again (the step
// stopped claiming once more items than max_failures were dead). Otherwise
// they would stay running after the run ended, and a killed attempt would
// not be counted (G5). Only the items with a running attempt are read
// (Tx.RunningItems), not every item of the step. Each is settled under its
// own lease, as a claim settles it (leftBehind.unit); an item that a live
// process holds is left to it.
func (lb leftBehind) items(ctx context.Context, in *attempt.Instance) error {
	var keys []string
	err := lb.p.store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		keys, err = tx.RunningItems(in.Run.ID, in.StepPath())
		return err
	})
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := lb.unit(ctx, in.Run, checkpoint.Unit{RunID: in.Run.ID, StepID: in.StepPath(), Item: key}); err != nil {
			return err
		}
	}
	return nil
}

// run settles, before run ends failed on a shared database, the attempts
// its steps and items still have recorded running while no live process
// holds them: a step that failed before this process (or while it ran)
// fails the run without claiming the steps beside it, and the attempts a
// dead process left on those would otherwise stay running after the run
// ended (G5). A loop's inner steps are not among them: this process, which
// holds the run, settled those as it began (settle). On SQLite it does
// nothing: a resume settled every attempt as it began.
func (lb leftBehind) run(ctx context.Context, run *checkpoint.Run) error {
	p := lb.p
	if !p.shared() {
		return nil
	}
	var running []checkpoint.Attempt
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		running, err = tx.RunningAttempts(run.ID)
		return err
	}); err != nil {
		return err
	}
	var units []checkpoint.Unit // in order, each once
	for _, a := range running {
		u := a.Unit()
		if strings.Contains(u.StepID, "/") || len(units) > 0 && units[len(units)-1] == u {
			continue
		}
		units = append(units, u)
	}
	for _, u := range units {
		if err := lb.unit(ctx, run, u); err != nil {
			return err
		}
	}
	return nil
}

// unit takes the lease of unit u (a step or an item), unless a live
// process holds it, reads the attempts the unit has running in the same
// transaction, settles them under the lease as a claim does (workItem,
// workStep; the agent killed when its process ran on this machine), and
// releases the lease. Killed in the middle, this process leaves the unit's
// attempts running under a lease of a dead holder, which the next process
// breaks (breakDeadLeases) or finds expired, and settles the same way.
func (lb leftBehind) unit(ctx context.Context, run *checkpoint.Run, u checkpoint.Unit) error {
	p := lb.p
	l := p.id.lease()
	l.RunID, l.StepID, l.ItemKey = u.RunID, u.StepID, u.Item
	var c claimed
	err := p.store.Update(checkpoint.WithoutLease(ctx), func(tx *checkpoint.Tx) (err error) {
		// Update may run this function again: nothing of a run before
		// is kept.
		c = claimed{}
		if c.lease, c.prev, err = tx.AcquireLease(l, p.leaseTTL(), p.id.gone); err != nil {
			return err
		}
		c.running, err = runningAttempts(tx, u)
		return err
	})
	var held *checkpoint.LeaseHeldError
	if errors.As(err, &held) {
		return nil // its holder settles it
	}
	if err != nil {
		return fmt.Errorf("take the lease of %s to settle it: %w", attempt.UnitLabel(u), err)
	}
	unitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release := p.holdLease(unitCtx, c.lease, func(err error) { cancel(err) })
	defer release()
	err = p.settleUnit(checkpoint.WithLease(unitCtx, c.lease), run, c.running, p.id.local(c.prev))
	if errors.Is(err, checkpoint.ErrLeaseLost) || errors.Is(context.Cause(unitCtx), checkpoint.ErrLeaseLost) {
		return nil // the process that took the lease settles it
	}
	return err
}

// openItems counts the items of a step that have not ended: read at every
// poll while other processes hold the last items, so it counts through an
// index instead of reading the items.
func openItems(ctx context.Context, store *checkpoint.Store, runID, stepID string) (int, error) {
	var n int
	err := store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		n, err = tx.OpenItems(runID, stepID)
		return err
	})
	return n, err
}

// heldByOther returns a *checkpoint.LeaseHeldError when a live process
// other than this one holds run runID.
func (ls *leases) heldByOther(tx *checkpoint.Tx, runID string) error {
	l, err := tx.LiveLease(runID, "", "")
	if err != nil {
		return err
	}
	if l != nil && l.Owner != ls.id.Owner && !ls.id.gone(*l) {
		return &checkpoint.LeaseHeldError{Holder: *l}
	}
	return nil
}
