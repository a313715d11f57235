package orchestrator

// A map step runs its agent step once per work item (SPEC §12).
//
// Concurrency and the guarantees. Up to max_parallel items run at once, each
// in a goroutine of its own that drives the very attempt machinery a step
// uses (runUnit with the item), so every rule of a step holds per item. The
// store has one connection, so every transaction of every item is
// serialised through it, each complete before the next begins:
//   - G1, row before process: an item's attempt row is committed in its own
//     transaction before that item's agent starts, exactly as for a step;
//     no item ever waits on another's process to commit.
//   - G3, exact counts: an item's attempt count and the decision to retry
//     are read and written by the item's own goroutine only, and attempt
//     numbers are dense per item (the store refuses a gap), so two items can
//     never take each other's numbers or counts.
//   - The agent's circuit is one row shared by all items: Acquire and
//     Record read and write it inside the transaction that begins or ends an
//     attempt, so concurrent items see each other's outcomes in commit order.
// Items are frozen (stored with their keys and values) in the transaction
// that starts the step, so a resume runs exactly those items. An item that
// ends failed is dead-lettered in the next transaction; a crash between the
// two is reconciled when the step runs again, since the dead letter is
// derived from the item's committed state.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/jsonvalue"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// maxItemsBytes bounds an items file: items are frozen into the store.
const maxItemsBytes = 64 << 20

// runMap runs the items of a map step and returns the step's output once
// every item has ended, or the step's failure once more items than
// max_failures are dead.
func (p *project) runMap(ctx context.Context, in *attempt.Instance) (stepResult, any, error) {
	run, ws := in.Run, in.Step
	items, state, err := p.freezeItems(ctx, in)
	var ie *itemsError
	if errors.As(err, &ie) {
		return p.failStep(ctx, in, ie.Error())
	}
	if err != nil {
		return 0, nil, err
	}

	var todo []*attempt.Item
	for _, it := range items {
		switch state[it.Key] {
		case checkpoint.StepSucceeded:
			// A crash may have come between the item's success and the
			// commit and removal of its worktree.
			if err := p.finishWorktree(ctx, in.WithItem(it)); err != nil {
				return 0, nil, err
			}
		case checkpoint.StepFailed:
			if err := p.deadLetter(ctx, in.WithItem(it), "", ""); err != nil {
				return 0, nil, err
			}
		default:
			todo = append(todo, it)
		}
	}
	if p.shared() {
		err = p.runItemsShared(ctx, in)
	} else {
		err = p.runItemsLocal(ctx, in, todo)
	}
	if err != nil {
		return 0, nil, err
	}
	dead, err := deadCount(ctx, p.store, run.ID, in.StepPath())
	if err != nil {
		return 0, nil, err
	}
	if dead <= ws.Map.MaxFailures && ws.Map.Merge {
		merged, err := p.mergeItems(ctx, in, items)
		if err != nil {
			return 0, nil, err
		}
		dead += merged
	}
	if dead > ws.Map.MaxFailures {
		return p.failStep(ctx, in, fmt.Sprintf("%s in the dead-letter queue, more than max_failures %d (see cadence dlq list)", history.Count(dead, "item is", "items are"), ws.Map.MaxFailures))
	}
	return p.finishMap(ctx, in)
}

// runItemsLocal runs the items of todo in this process, up to max_parallel
// at once, until they have all ended or more items than max_failures are
// dead; then it waits for the running ones to end.
func (p *project) runItemsLocal(ctx context.Context, in *attempt.Instance, todo []*attempt.Item) error {
	run, ws := in.Run, in.Step
	dead, err := deadCount(ctx, p.store, run.ID, in.StepPath())
	if err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, ws.Map.MaxParallel)
	var wg sync.WaitGroup
	for _, it := range todo {
		mu.Lock()
		stop := dead > ws.Map.MaxFailures || firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		mu.Lock()
		stop = dead > ws.Map.MaxFailures || firstErr != nil || ctx.Err() != nil
		mu.Unlock()
		if stop {
			if ctx.Err() != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = attempt.ErrInterrupted
				}
				mu.Unlock()
			}
			break
		}
		wg.Add(1)
		go func(it *attempt.Item) {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := p.runItem(ctx, in.WithItem(it))
			if err == nil && res == stepFailed {
				err = p.deadLetter(ctx, in.WithItem(it), "", "")
				mu.Lock()
				dead++
				mu.Unlock()
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil || errors.Is(firstErr, attempt.ErrInterrupted) && !errors.Is(err, attempt.ErrInterrupted) {
					firstErr = err
				}
				mu.Unlock()
			}
		}(it)
	}
	wg.Wait()
	return firstErr
}

// runItem runs one item: in its own git worktree when the step asks for
// one, whose changes are committed on the item's branch once it succeeded.
func (p *project) runItem(ctx context.Context, in *attempt.Instance) (stepResult, error) {
	if in.Step.Map.Workspace == workflow.WorkspaceWorktree {
		base, err := p.baseCommit(ctx, in.Run.ID, in.StepPath())
		if err != nil {
			return 0, err
		}
		path, branch := p.worktreeOf(in)
		if err := p.repo().Worktree(ctx, path, branch, base); err != nil {
			return 0, fmt.Errorf("the worktree of %s: %w", in.Label(), err)
		}
	}
	res, _, err := p.runUnit(ctx, in)
	if err != nil || res != stepDone {
		return res, err
	}
	return res, p.finishWorktree(ctx, in)
}

// itemsError is a problem with a map step's items that fails the step
// before any item runs: a missing source, a value that is not a list, a
// duplicate or missing key.
type itemsError struct{ msg string }

func (e *itemsError) Error() string { return e.msg }

func itemsErrorf(format string, args ...any) error {
	return &itemsError{msg: fmt.Sprintf(format, args...)}
}

// freezeItems returns the step's items and their status by key: the items
// stored when it started, or, on its first run, the items of its source,
// stored now together with the step's start.
func (p *project) freezeItems(ctx context.Context, in *attempt.Instance) ([]*attempt.Item, map[string]checkpoint.StepStatus, error) {
	run, ws := in.Run, in.Step
	var rows []checkpoint.Step
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		rows, err = tx.Items(run.ID, in.StepPath())
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("read the items of step %s: %w", in.StepPath(), err)
	}
	if len(rows) == 0 {
		values, err := p.itemsSource(in)
		if err != nil {
			return nil, nil, err
		}
		keys, err := itemKeys(values, ws.Map.Key)
		if err != nil {
			return nil, nil, err
		}
		now := p.now()
		rows = make([]checkpoint.Step, len(values))
		for i, v := range values {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, nil, fmt.Errorf("encode item %d of step %s: %w", i, in.StepPath(), err)
			}
			rows[i] = checkpoint.NewStep(checkpoint.Step{RunID: run.ID, ID: in.StepPath(), ItemKey: keys[i], ItemIdx: i + 1,
				ItemJSON: b, Agent: ws.Agent, MaxAttempts: ws.Retry.MaxAttempts, CostKnown: true}, now)
		}
		base, from := "", ""
		if ws.Map.Workspace == workflow.WorkspaceWorktree {
			if base, from, err = p.itemsBase(ctx, in); err != nil {
				return nil, nil, err
			}
		}
		if err := p.store.Update(ctx, func(tx *checkpoint.Tx) error {
			s, err := tx.Step(run.ID, in.StepPath())
			if err != nil {
				return err
			}
			s.BaseCommit, s.UpdatedAt = base, now
			for i := range rows {
				rows[i].Idx = s.Idx // the map step's position: its own, or its iteration's inside a loop
			}
			if s.Status() == checkpoint.StepPending {
				err = tx.StepRunning(s, now)
			} else {
				err = tx.UpdateStep(*s)
			}
			if err != nil {
				return err
			}
			return tx.InsertItems(rows)
		}); err != nil {
			return nil, nil, fmt.Errorf("store the items of step %s: %w", in.StepPath(), err)
		}
		p.sink.Emit(history.Event{Time: now, Type: history.EventItemsFrozen, RunID: run.ID, Step: in.StepPath(), Agent: ws.Agent,
			Message: fmt.Sprintf("%s, up to %d at once%s", history.Count(len(rows), "item", "items"), ws.Map.MaxParallel, from)})
	}
	items := make([]*attempt.Item, len(rows))
	state := make(map[string]checkpoint.StepStatus, len(rows))
	for i := range rows {
		it, err := itemOf(&rows[i])
		if err != nil {
			return nil, nil, err
		}
		p.placeItem(in.WithItem(it))
		items[i] = it
		state[it.Key] = rows[i].Status()
	}
	return items, state, nil
}

// itemOf rebuilds an item from its stored row.
func itemOf(row *checkpoint.Step) (*attempt.Item, error) {
	v, err := jsonvalue.Decode(row.ItemJSON)
	if err != nil {
		return nil, fmt.Errorf("item %q of step %s: stored value: %w", row.ItemKey, row.ID, err)
	}
	return attempt.NewItem(row.ItemKey, v), nil
}

// deadCount counts the dead items of a step (checkpoint.Tx.DeadCount, as
// a shared map's claim counts them).
func deadCount(ctx context.Context, store *checkpoint.Store, runID, stepID string) (int, error) {
	var n int
	err := store.View(ctx, func(tx *checkpoint.Tx) (err error) {
		n, err = tx.DeadCount(runID, stepID)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read the dead-letter queue of run %s: %w", runID, err)
	}
	return n, nil
}

// frozenItem returns the stored item a unit names, nil for a step.
func (p *project) frozenItem(ctx context.Context, u checkpoint.Unit) (*attempt.Item, error) {
	if u.Item == "" {
		return nil, nil
	}
	var row *checkpoint.Step
	if err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		var err error
		row, err = tx.Unit(u)
		return err
	}); err != nil {
		return nil, fmt.Errorf("read %s: %w", attempt.UnitLabel(u), err)
	}
	it, err := itemOf(row)
	if err != nil {
		return nil, err
	}
	if ws := p.wf.Step(u.StepID); ws != nil && ws.Map != nil {
		p.placeItem(&attempt.Instance{Run: &checkpoint.Run{ID: u.RunID}, Step: ws, Item: it})
	}
	return it, nil
}

// itemsSource reads the items of a map step from an earlier step's handoff
// or from a file.
func (p *project) itemsSource(in *attempt.Instance) ([]any, error) {
	ws, outputs := in.Step, in.Outputs
	m := ws.Map
	if m.ItemsFile != "" {
		return readItemsFile(filepath.Join(p.dir, m.ItemsFile), m.ItemsFile)
	}
	src, ok := outputs[m.ItemsStep].(map[string]any)
	if !ok {
		return nil, itemsErrorf("the items of step %s come from step %s, which has no output", in.StepPath(), m.ItemsStep)
	}
	v, err := jsonPointer(src["Output"], m.ItemsPointer)
	if err != nil {
		return nil, itemsErrorf("the items of step %s: pointer %q into the handoff of step %s: %v", in.StepPath(), m.ItemsPointer, m.ItemsStep, err)
	}
	list, ok := v.(jsonvalue.Array)
	if !ok {
		return nil, itemsErrorf("the items of step %s: pointer %q into the handoff of step %s is %s, not an array", in.StepPath(), m.ItemsPointer, m.ItemsStep, jsonvalue.Kind(v))
	}
	return list, nil
}

// readItemsFile reads a JSON array, or JSON Lines (one item per line).
func readItemsFile(path, rel string) ([]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, itemsErrorf("read the items file %s: %v", rel, err)
	}
	if len(b) > maxItemsBytes {
		return nil, itemsErrorf("the items file %s has %d bytes, over the limit of %d", rel, len(b), maxItemsBytes)
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		v, err := jsonvalue.Decode(trimmed)
		if err != nil {
			return nil, itemsErrorf("the items file %s: %v", rel, err)
		}
		list, ok := v.(jsonvalue.Array)
		if !ok {
			return nil, itemsErrorf("the items file %s: not a JSON array", rel)
		}
		return list, nil
	}
	var list []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxItemsBytes)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		v, err := jsonvalue.Decode(text)
		if err != nil {
			return nil, itemsErrorf("the items file %s, line %d: %v (want a JSON array, or one JSON value per line)", rel, line, err)
		}
		list = append(list, v)
	}
	if err := sc.Err(); err != nil {
		return nil, itemsErrorf("read the items file %s: %v", rel, err)
	}
	return list, nil
}

// itemKeys returns each item's key: the string or integer at pointer, or
// its index when pointer is "". Duplicate and missing keys are errors.
func itemKeys(items []any, pointer string) ([]string, error) {
	keys := make([]string, len(items))
	seen := make(map[string]int, len(items))
	for i, it := range items {
		if pointer == "" {
			keys[i] = strconv.Itoa(i)
			continue
		}
		v, err := jsonPointer(it, pointer)
		if err != nil {
			return nil, itemsErrorf("item %d has no key at %q: %v", i, pointer, err)
		}
		var k string
		switch x := v.(type) {
		case string:
			k = x
		case json.Number:
			var ok bool
			if k, ok = integerText(x); !ok {
				return nil, itemsErrorf("item %d: key %v at %q is not a whole number or a string", i, x, pointer)
			}
		default:
			return nil, itemsErrorf("item %d: the key at %q is %s, not a string or a number", i, pointer, jsonvalue.Kind(v))
		}
		if k == "" {
			return nil, itemsErrorf("item %d: the key at %q is empty", i, pointer)
		}
		if first, dup := seen[k]; dup {
			return nil, itemsErrorf("items %d and %d have the same key %q (keys at %q must be unique)", first, i, k, pointer)
		}
		seen[k] = i
		keys[i] = k
	}
	return keys, nil
}

// jsonPointer resolves an RFC 6901 pointer in a decoded JSON value.
func jsonPointer(v any, pointer string) (any, error) {
	if pointer == "" {
		return v, nil
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case jsonvalue.Object:
			next, ok := x[tok]
			if !ok {
				return nil, fmt.Errorf("no member %q", tok)
			}
			v = next
		case jsonvalue.Array:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no element %q in an array of %d", tok, len(x))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("%q goes into %s", tok, jsonvalue.Kind(v))
		}
	}
	return v, nil
}

// itemStates returns the status of each item of a step, by key.
func itemStates(ctx context.Context, store *checkpoint.Store, runID, stepID string) (map[string]checkpoint.StepStatus, error) {
	out := map[string]checkpoint.StepStatus{}
	err := store.View(ctx, func(tx *checkpoint.Tx) error {
		rows, err := tx.Items(runID, stepID)
		for _, r := range rows {
			out[r.ItemKey] = r.Status()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the items of step %s: %w", stepID, err)
	}
	return out, nil
}

// deadLetter puts a failed item into the dead-letter queue, unless it is
// there already (a crash between the item's failure and this commit).
//
// class and msg, when set, are the failure itself (a merge conflict);
// otherwise it is the item's last failed attempt's.
func (p *project) deadLetter(ctx context.Context, in *attempt.Instance, class, msg string) error {
	runID, ws, it := in.Run.ID, in.Step, in.Item
	u := in.Unit()
	now := p.now()
	var d checkpoint.DeadLetter
	added := false
	err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		list, err := tx.DeadLetters(runID)
		if err != nil {
			return err
		}
		for _, x := range list {
			if x.StepID == in.StepPath() && x.ItemKey == it.Key {
				return nil
			}
		}
		attempts, err := tx.UnitAttempts(u)
		if err != nil {
			return err
		}
		used, err := tx.UnitCountCounted(u)
		if err != nil {
			return err
		}
		d = checkpoint.DeadLetter{RunID: runID, StepID: in.StepPath(), ItemKey: it.Key, Attempts: used, DeadAt: now,
			FirstAt: now, LastAt: now, Class: "failed"}
		if len(attempts) > 0 {
			d.FirstAt = attempts[0].StartedAt
			last := attempts[len(attempts)-1]
			d.LastAt = last.StartedAt
			if last.FinishedAt != nil {
				d.LastAt = *last.FinishedAt
			}
			for i := len(attempts) - 1; i >= 0 && class == ""; i-- {
				if a := attempts[i]; a.Class != "" {
					d.Class, d.Error = a.Class, a.Error
					break
				}
			}
		}
		if class != "" {
			d.Class, d.Error = class, msg
		}
		d.Signature = signature(d.Class, d.Error)
		added = true
		if err := tx.AddDeadLetter(d); err != nil {
			return err
		}
		return p.notes.enqueue(tx, itemDeadEvent(in, d))
	})
	if err != nil {
		return fmt.Errorf("dead-letter %s: %w", attempt.UnitLabel(u), err)
	}
	p.notes.kick()
	if added {
		p.sink.Emit(history.Event{Time: now, Type: history.EventItemDead, RunID: runID, Step: in.StepPath(), Item: it.Key, Agent: ws.Agent,
			Class: d.Class, Error: d.Error, Message: "sent to the dead-letter queue after " + history.Count(d.Attempts, "attempt", "attempts")})
	}
	return nil
}

var (
	quotedText = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	hexRun     = regexp.MustCompile(`\b[0-9a-f]{8,}\b`)
	digitRun   = regexp.MustCompile(`[0-9]+`)
	spaceRun   = regexp.MustCompile(`\s+`)
)

// maxSignatureBytes bounds a signature: it groups failures, it need not
// tell their whole story.
const maxSignatureBytes = 160

// signature groups alike failures: the class and the first line of the
// error with what varies between occurrences (quoted values, numbers,
// hashes) replaced, so "line 12" and "line 40" group together.
func signature(class, msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	line = strings.TrimPrefix(line, class+": ")
	line = quotedText.ReplaceAllString(line, `"…"`)
	line = hexRun.ReplaceAllString(line, "#")
	line = digitRun.ReplaceAllString(line, "N")
	line = strings.TrimSpace(spaceRun.ReplaceAllString(line, " "))
	if len(line) > maxSignatureBytes {
		line = strings.ToValidUTF8(line[:maxSignatureBytes], "") + "…"
	}
	if line == "" {
		return class
	}
	return class + ": " + line
}

// finishMap records a map step whose items have all ended, with at most
// max_failures dead: its output lists each succeeded item's output and
// each dead item's failure, in the items' order, for later steps to reduce.
func (p *project) finishMap(ctx context.Context, in *attempt.Instance) (stepResult, any, error) {
	run, ws := in.Run, in.Step
	type done struct {
		Key    string          `json:"key"`
		Output json.RawMessage `json:"output"`
	}
	type failed struct {
		Key   string `json:"key"`
		Class string `json:"class"`
		Error string `json:"error"`
	}
	out := struct {
		Items  []done   `json:"items"`
		Failed []failed `json:"failed"`
	}{Items: []done{}, Failed: []failed{}}
	var (
		cost  float64
		turns int
	)
	err := p.store.View(ctx, func(tx *checkpoint.Tx) error {
		rows, err := tx.Items(run.ID, in.StepPath())
		if err != nil {
			return err
		}
		dead, err := tx.DeadLetters(run.ID)
		if err != nil {
			return err
		}
		byKey := map[string]checkpoint.DeadLetter{}
		for _, d := range dead {
			if d.StepID == in.StepPath() {
				byKey[d.ItemKey] = d
			}
		}
		for _, r := range rows {
			cost += r.CostUSD
			turns += r.Turns
			if r.Status() == checkpoint.StepSucceeded {
				var env handoff.Envelope
				if err := json.Unmarshal(r.HandoffJSON, &env); err != nil {
					return fmt.Errorf("item %q: stored handoff: %w", r.ItemKey, err)
				}
				if _, dead := byKey[r.ItemKey]; !dead {
					out.Items = append(out.Items, done{Key: r.ItemKey, Output: env.Data})
					continue
				}
			}
			d := byKey[r.ItemKey]
			out.Failed = append(out.Failed, failed{Key: r.ItemKey, Class: d.Class, Error: d.Error})
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("read the items of step %s: %w", in.StepPath(), err)
	}
	data, err := json.Marshal(out)
	if err != nil {
		return 0, nil, fmt.Errorf("encode the output of step %s: %w", in.StepPath(), err)
	}
	now := p.now()
	env := handoff.Envelope{Component: ws.ID, Timestamp: now, Status: "success", Data: data,
		Metadata: handoff.EnvelopeMetadata{Attempts: len(out.Items) + len(out.Failed), Repairs: []string{}, PreviousErrors: []string{},
			CostUSD: cost, Turns: turns}}
	envJSON, err := json.Marshal(env)
	if err != nil {
		return 0, nil, fmt.Errorf("encode envelope: %w", err)
	}
	if err := p.attempts.WriteEnvelope(in, env); err != nil {
		return 0, nil, err
	}
	if err := p.store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		s, err := tx.Step(run.ID, in.StepPath())
		if err != nil {
			return err
		}
		return tx.StepSucceeded(s, envJSON, now)
	}); err != nil {
		return 0, nil, fmt.Errorf("record the success of step %s: %w", in.StepPath(), err)
	}
	p.sink.Emit(history.Event{Time: now, Type: history.EventStepSucceeded, RunID: run.ID, Step: in.StepPath(), Agent: ws.Agent, CostUSD: cost,
		Message: fmt.Sprintf("%s succeeded, %d dead", history.Count(len(out.Items), "item", "items"), len(out.Failed))})
	v, _ := jsonvalue.Decode(data)
	return stepDone, v, nil
}

// integerText returns a whole number's decimal text: the number as written
// when it is an integer literal, however large (9007199254740993 stays
// itself), or the value of a small whole number written otherwise (2.0,
// 1e3).
func integerText(n json.Number) (string, bool) {
	s := string(n)
	if strings.Trim(strings.TrimPrefix(s, "-"), "0123456789") == "" && s != "" && s != "-" {
		return s, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return "", false
	}
	return strconv.FormatInt(int64(f), 10), true
}
