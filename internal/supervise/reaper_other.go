//go:build !linux

package supervise

// becomeSubreaper does nothing: only Linux has child subreapers, and an
// orphan goes to init.
func becomeSubreaper() error { return nil }

// descendants finds nothing without /proc; the supervisor's group is
// still killed.
func descendants(int) []int { return nil }
