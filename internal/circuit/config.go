package circuit

import "time"

// Defaults applied by Normalize to settings left at zero.
const (
	DefaultFailures      = 3
	DefaultOpenFor       = 2 * time.Minute
	DefaultHalfOpenCalls = 1
)

// Config is an agent's circuit: settings from workflow.yaml.
type Config struct {
	Failures      int           // consecutive counted failures that open the breaker
	OpenFor       time.Duration // how long it stays open before trials
	HalfOpenCalls int           // trial attempts allowed, and needed to close, while half-open
}

// Normalize returns c with every setting that is zero or negative replaced
// by its default. The functions of this package normalize their Config
// themselves; Normalize is exported so callers can show the effective values.
func (c Config) Normalize() Config {
	if c.Failures <= 0 {
		c.Failures = DefaultFailures
	}
	if c.OpenFor <= 0 {
		c.OpenFor = DefaultOpenFor
	}
	if c.HalfOpenCalls <= 0 {
		c.HalfOpenCalls = DefaultHalfOpenCalls
	}
	return c
}
