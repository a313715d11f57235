package workflow

import (
	"fmt"
	"testing"

	"github.com/cadence-dev/cadence/internal/retrystate"
)

// TestRetryClassesAgreeWithPolicy loads a step naming each failure class in
// retry.never, and each retryable one in retry.on, and checks that the
// policy the run builds from what the loader accepted is one the retry
// package accepts: the two know the same classes.
func TestRetryClassesAgreeWithPolicy(t *testing.T) {
	for _, class := range retrystate.Classes {
		for _, list := range []string{"on", "never"} {
			t.Run(list+"/"+class, func(t *testing.T) {
				src := fmt.Sprintf("version: 1\nagents: {x: {preset: claude}}\nsteps:\n  - {id: a, agent: x, prompt: a, retry: {%s: [%s]}}\n", list, class)
				w, errs := build([]byte(src), "wf.yaml", "")
				if list == "on" && retrystate.Terminal(class) {
					want := fmt.Sprintf("wf.yaml:4:47: steps[0].retry.on[0]: class %q always ends the step and is never retried; remove it from retry.on", class)
					if errs.Error() != want {
						t.Errorf("errors:\n%v\nwant:\n%s", errs, want)
					}
					return
				}
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				r := w.Steps[0].Retry
				p := retrystate.Policy{
					MaxAttempts: r.MaxAttempts, Backoff: retrystate.Backoff(r.Backoff), Initial: r.Initial,
					Multiplier: r.Multiplier, Max: r.Max, Jitter: retrystate.Jitter(r.Jitter), On: r.On, Never: r.Never,
				}
				if err := p.Validate(); err != nil {
					t.Errorf("the loader accepted retry.%s: [%s], the policy refuses it: %v", list, class, err)
				}
			})
		}
	}
}

// TestRetryClassUnknown: a misspelt class is refused with the list.
func TestRetryClassUnknown(t *testing.T) {
	src := "version: 1\nagents: {x: {preset: claude}}\nsteps:\n  - {id: a, agent: x, prompt: a, retry: {never: [chek]}}\n"
	_, errs := build([]byte(src), "wf.yaml", "")
	want := `wf.yaml:4:50: steps[0].retry.never[0]: unknown failure class "chek" (want ` + alternatives(retrystate.Classes, "or") + ")"
	if errs.Error() != want {
		t.Errorf("errors:\n%v\nwant:\n%s", errs, want)
	}
}
