package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/checkpoint"
)

// Defaults of a Deliverer.
const (
	// DefaultTries is how many times a delivery is tried before it is
	// given up (status failed).
	DefaultTries = 5
	// DefaultTimeout bounds one try: the whole HTTP request, or the
	// command's run.
	DefaultTimeout = 10 * time.Second
	// DefaultFirstBackoff is the wait after the first failed try; each
	// later one is three times the one before (5s, 15s, 45s, 2m15s: five
	// tries over about three and a half minutes).
	DefaultFirstBackoff = 5 * time.Second
	// claimMargin is added to the timeout when a try begins: a process that
	// dies during the try leaves the row due again that much later, for the
	// next process to send; sooner when that process can tell the holder
	// is dead (Deliverer.Gone).
	claimMargin = 30 * time.Second
	// batch is how many due rows one pass takes.
	batch = 32
	// maxResponseBytes bounds what is read of a webhook's answer.
	maxResponseBytes = 4 << 10
)

// FailBeforeDelivery is the failpoint (CADENCE_FAILPOINT) that fires when
// a pass of the Deliverer is about to take the due rows: the events are
// committed and nothing has been sent.
const FailBeforeDelivery = "before-delivery"

// Deliverer sends the pending rows of the outbox. Its zero fields take
// the defaults; Store is required.
type Deliverer struct {
	Store *checkpoint.Store
	Dir   string   // where commands run: the project directory
	Env   []string // the environment of commands
	// SelfExe, when set, supervises commands as it does agents: the
	// command's whole process group is killed on timeout and when
	// cadence dies.
	SelfExe      string
	Log          *slog.Logger
	Now          func() time.Time
	Client       *http.Client
	Timeout      time.Duration
	Tries        int
	FirstBackoff time.Duration
	// BeforePass, when set, is called when a pass found rows due, before
	// it takes them (a failpoint, in tests).
	BeforePass func()
	// Poll is how often the background loop looks for rows that another
	// process added (a worker on a shared state); 0 means 30s.
	Poll time.Duration
	// Holder names this process (Owner, Host, PID, as in a lease) in the
	// claim of each try it begins, and Gone tells whether the holder of
	// another claim is dead: a row claimed by a dead process is taken at
	// once rather than when its claim runs out. Without them claims run
	// out by time alone.
	Holder checkpoint.Lease
	Gone   func(holder checkpoint.Lease) bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// sendCtx is what a try runs under: cancelled when Stop's deadline
	// passes.
	sendCtx    context.Context
	cancelSend context.CancelFunc
	once       sync.Once
}

func (d *Deliverer) init() {
	d.once.Do(func() {
		if d.Log == nil {
			d.Log = slog.New(slog.DiscardHandler)
		}
		if d.Now == nil {
			d.Now = time.Now
		}
		if d.Timeout <= 0 {
			d.Timeout = DefaultTimeout
		}
		if d.Tries <= 0 {
			d.Tries = DefaultTries
		}
		if d.Poll <= 0 {
			d.Poll = 30 * time.Second
		}
		if d.FirstBackoff <= 0 {
			d.FirstBackoff = DefaultFirstBackoff
		}
		if d.Client == nil {
			d.Client = &http.Client{
				// A redirect is not followed: a POST turned into a GET
				// is not a delivery.
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			}
		}
		d.kick = make(chan struct{}, 1)
	})
}

// Start sends pending rows in the background until Stop: at once, after
// every Kick, when the soonest pending row falls due, and every Poll. ctx's values
// are kept, its cancellation is not: a run stopped by Ctrl-C still gets
// the bounded flush of Stop.
func (d *Deliverer) Start(ctx context.Context) {
	d.init()
	d.stop, d.done = make(chan struct{}), make(chan struct{})
	d.sendCtx, d.cancelSend = context.WithCancel(context.WithoutCancel(ctx))
	go d.loop()
}

// Kick tells a started Deliverer that events were committed. It never
// blocks.
func (d *Deliverer) Kick() {
	if d == nil || d.kick == nil {
		return
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Stop sends what is due, for at most flush, and stops the background
// loop; a try still running at the deadline is cut short and recorded as
// failed. What is not delivered stays in the outbox for the next process.
func (d *Deliverer) Stop(flush time.Duration) {
	if d == nil || d.done == nil {
		return
	}
	timer := time.AfterFunc(flush, d.cancelSend)
	defer timer.Stop()
	close(d.stop)
	<-d.done
	d.cancelSend()
}

func (d *Deliverer) loop() {
	defer close(d.done)
	var wait *time.Timer
	for {
		next, err := d.Pass(d.sendCtx)
		if err != nil && d.sendCtx.Err() == nil {
			d.Log.Warn("notifications: "+err.Error(), "err", err)
		}
		sleep := d.Poll
		if !next.IsZero() {
			sleep = min(sleep, max(next.Sub(d.Now()), 10*time.Millisecond))
		}
		wait = time.NewTimer(sleep)
		due := wait.C
		select {
		case <-d.stop:
			if wait != nil {
				wait.Stop()
			}
			// One last pass for what became due meanwhile, under the
			// flush deadline.
			if _, err := d.Pass(d.sendCtx); err != nil && d.sendCtx.Err() == nil {
				d.Log.Warn("notifications: "+err.Error(), "err", err)
			}
			return
		case <-d.kick:
		case <-due:
		}
		if wait != nil {
			wait.Stop()
			wait = nil
		}
	}
}

// Pass sends every row due now and returns when the soonest row still
// pending is due (zero when none is). Each try is claimed in the state
// before it begins (its attempts counted, its next try moved past its
// timeout) and its outcome recorded after. Targets are sent to at the
// same time (see sendAll): one that never answers delays no other.
func (d *Deliverer) Pass(ctx context.Context) (time.Time, error) {
	d.init()
	gone := d.gone
	if d.Gone == nil {
		gone = nil
	}
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		var due []checkpoint.Delivery
		now := d.Now().UTC()
		// A look first: a pass with nothing due writes nothing.
		var peek []checkpoint.Delivery
		if err := d.Store.View(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
			var err error
			peek, err = tx.DueDeliveries(now, 1, gone)
			return err
		}); err != nil {
			return time.Time{}, fmt.Errorf("look for deliveries due: %w", err)
		}
		if len(peek) == 0 {
			break
		}
		if first && d.BeforePass != nil {
			d.BeforePass()
		}
		first = false
		err := d.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
			rows, err := tx.DueDeliveries(now, batch, gone)
			if err != nil {
				return err
			}
			due = due[:0]
			// The rows of one target are sent one after the other: the
			// claim of each covers the tries before it on its target.
			queued := map[string]int{}
			for _, r := range rows {
				queued[string(r.TargetJSON)]++
				ahead := time.Duration(queued[string(r.TargetJSON)])
				if r.Claim.Owner != "" {
					d.Log.Info("notification taken over: another process began its try and did not finish it", "event", r.Event,
						"run", r.RunID, "target", r.Target, "pid", r.Claim.PID, "host", r.Claim.Host)
				}
				r.Attempts++
				r.NextTryAt = now.Add(ahead*d.Timeout + claimMargin)
				r.Claim = checkpoint.Lease{Owner: d.Holder.Owner, Host: d.Holder.Host, PID: d.Holder.PID}
				if err := tx.UpdateDelivery(r); err != nil {
					return err
				}
				due = append(due, r)
			}
			return nil
		})
		if err != nil {
			return time.Time{}, fmt.Errorf("take the deliveries due: %w", err)
		}
		if err := d.sendAll(ctx, due); err != nil {
			return time.Time{}, err
		}
		if len(due) < batch {
			break
		}
	}
	var next *time.Time
	if err := d.Store.View(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		var err error
		next, err = tx.NextDeliveryAt()
		return err
	}); err != nil {
		return time.Time{}, err
	}
	if next == nil {
		return time.Time{}, nil
	}
	return *next, nil
}

// sendAll tries the claimed rows, each target on its own: the rows of one
// target one after the other, in their order, and the targets at the
// same time, each try bounded by the Deliverer's timeout. A webhook that
// never answers therefore holds up only its own rows, never a command or
// another webhook. Each outcome is recorded as soon as it is known; rows
// left untried when ctx ends are given back. It returns ctx's error if ctx
// ended, or the first error recording an outcome.
func (d *Deliverer) sendAll(ctx context.Context, due []checkpoint.Delivery) error {
	var order []string
	byTarget := map[string][]checkpoint.Delivery{}
	for _, r := range due {
		k := string(r.TargetJSON)
		if _, ok := byTarget[k]; !ok {
			order = append(order, k)
		}
		byTarget[k] = append(byTarget[k], r)
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, k := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.sendTarget(ctx, byTarget[k])
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// sendTarget tries the rows of one target, in order, recording each
// outcome; the rows not tried when ctx ends are given back, due at once.
func (d *Deliverer) sendTarget(ctx context.Context, rows []checkpoint.Delivery) error {
	for i, r := range rows {
		if ctx.Err() != nil {
			return d.record(ctx, rows[i:], nil, true)
		}
		sendErr := d.send(ctx, r)
		if sendErr != nil && ctx.Err() != nil {
			sendErr = errors.New("cut short: cadence was exiting")
		}
		if err := d.record(ctx, rows[i:i+1], sendErr, false); err != nil {
			return err
		}
	}
	return nil
}

// record writes the outcome of a try of each row: delivered when sendErr
// is nil, else its error and the next try after backoff, or failed for
// good after the last try. untried gives claimed tries back, due at once.
func (d *Deliverer) record(ctx context.Context, rows []checkpoint.Delivery, sendErr error, untried bool) error {
	now := d.Now().UTC()
	return d.Store.Update(context.WithoutCancel(ctx), func(tx *checkpoint.Tx) error {
		for _, r := range rows {
			r.Claim = checkpoint.Lease{} // the try is over
			switch {
			case untried:
				r.Attempts--
				r.NextTryAt = now
			case sendErr == nil:
				r.Status, r.DeliveredAt, r.LastError = checkpoint.DeliveryDelivered, &now, ""
				d.Log.Info("notification delivered", "event", r.Event, "run", r.RunID, "target", r.Target, "try", r.Attempts)
			default:
				r.LastError = sendErr.Error()
				r.NextTryAt = now.Add(d.backoff(r.Attempts))
				if r.Attempts >= d.Tries {
					r.Status = checkpoint.DeliveryFailed
				}
				d.Log.Warn("notification not delivered", "event", r.Event, "run", r.RunID, "target", r.Target,
					"try", r.Attempts, "of", d.Tries, "err", r.LastError)
			}
			if err := tx.UpdateDelivery(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// gone tells DueDeliveries whether the holder of a claim is dead: never
// this process itself.
func (d *Deliverer) gone(holder checkpoint.Lease) bool {
	return d.Gone != nil && holder.Owner != d.Holder.Owner && d.Gone(holder)
}

// backoff is the wait after failed try n.
func (d *Deliverer) backoff(n int) time.Duration {
	b := d.FirstBackoff
	for i := 1; i < n && b < time.Hour; i++ {
		b *= 3
	}
	return b
}

// send tries one delivery; nil means the target took it.
func (d *Deliverer) send(ctx context.Context, r checkpoint.Delivery) error {
	var t target
	if err := json.Unmarshal(r.TargetJSON, &t); err != nil {
		return fmt.Errorf("the stored target cannot be read: %w", err)
	}
	switch {
	case t.Webhook != "":
		ctx, cancel := context.WithTimeout(ctx, d.Timeout)
		defer cancel()
		return d.post(ctx, t.Webhook, r)
	case len(t.Command) > 0:
		return d.command(ctx, t.Command, r)
	}
	return errors.New("the stored target has neither a webhook nor a command")
}

// post sends the body to a webhook: a 2xx answer is a delivery. Errors
// never hold the URL, whose path may be a secret.
func (d *Deliverer) post(ctx context.Context, hook string, r checkpoint.Delivery) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, bytes.NewReader(r.BodyJSON))
	if err != nil {
		return errors.New("invalid webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", r.IdempotencyKey)
	req.Header.Set("User-Agent", "cadence")
	resp, err := d.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no answer within %s: %w", d.Timeout, ctx.Err())
		}
		return fmt.Errorf("POST failed: %w", err)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode/100 == 2 {
		return nil
	}
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if s := oneLine(string(bytes.ToValidUTF8(head, nil))); s != "" {
		msg += ": " + clip(s, 200)
	}
	return errors.New(msg)
}

// command runs the target's argv, no shell, with the body on its standard
// input: exit 0 is a delivery. The command's own timeout (Spec.Timeout)
// bounds it: TERM to its process group, KILL after a grace.
func (d *Deliverer) command(ctx context.Context, argv []string, r checkpoint.Delivery) error {
	res, err := agent.Run(ctx, agent.Spec{
		Argv: argv, Env: d.Env, Dir: d.Dir, Stdin: append(r.BodyJSON, '\n'), Protocol: agent.ProtocolNone,
		Timeout: d.Timeout, Grace: 2 * time.Second, Supervisor: d.SelfExe,
	})
	if err != nil {
		return fmt.Errorf("command %s: %w", argv[0], err)
	}
	switch {
	case res.Stop == agent.StopTimeout:
		return fmt.Errorf("command %s did not end within %s", argv[0], d.Timeout)
	case res.Stop != agent.StopNone:
		return fmt.Errorf("command %s was stopped (%s)", argv[0], res.Stop)
	case res.Signal != 0:
		return fmt.Errorf("command %s was ended by signal %s", argv[0], res.Signal)
	case res.ExitCode != 0:
		msg := fmt.Sprintf("command %s exited with code %d", argv[0], res.ExitCode)
		if s := oneLine(res.StderrTail); s != "" {
			msg += ": " + clip(s, 200)
		}
		return errors.New(msg)
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
