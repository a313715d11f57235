//go:build !linux

package attempt

// outputWatch has no watches outside Linux: every check of a
// CADENCE_OUTPUTS_DIR goes by the stamps.
type outputWatch struct{ off bool }

// watchedDir is never made outside Linux.
type watchedDir struct{ own map[string]bool }

func (*outputWatch) init() bool                                      { return false }
func (*outputWatch) close()                                          {}
func (*outputWatch) fresh(string, map[string]*encoded) *watchedDir   { return nil }
func (*outputWatch) begin(string) *watchedDir                        { return nil }
func (*outputWatch) check(*watchedDir, string, *encoded) bool        { return false }
func (*outputWatch) write(*watchedDir, string, string, []byte) error { return nil }
func (*outputWatch) end(*watchedDir)                                 {}
