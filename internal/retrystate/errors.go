package retrystate

import (
	"errors"
	"fmt"
)

// ErrInvalidPolicy is matched (errors.Is) by every error Validate returns.
var ErrInvalidPolicy = errors.New("invalid retry policy")

// PolicyError names the retry setting that is wrong, the value found and why
// it is refused, so the message a user sees points at the key to fix.
type PolicyError struct {
	Field  string // workflow key under retry:, e.g. "max_attempts"
	Value  any
	Reason string
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("retry.%s: %v: %s", e.Field, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidPolicy) true for every PolicyError.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }
