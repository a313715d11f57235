package pgtest

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// Shared is one cluster for a whole test binary, started by the first test
// that asks for a database, so a run of only the tests that need none
// starts nothing. Declare one in the test package and stop it in TestMain
// after m.Run:
//
//	var pg pgtest.Shared
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		if err := pg.Stop(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			code = 1
//		}
//		os.Exit(code)
//	}
//
// Its zero value is ready to use; it is safe for concurrent use.
type Shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Cluster returns the shared cluster, starting it on first use; a cluster
// that could not start fails the test (it is never skipped).
func (s *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	s.once.Do(func() { s.cluster, s.err = Start(context.Background()) })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.cluster
}

// NewDatabase creates a fresh, empty database on the shared cluster for the
// test and returns its URL; the database is dropped when the test ends.
func (s *Shared) NewDatabase(t testing.TB) string {
	t.Helper()
	c := s.Cluster(t)
	u, name, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.DropDatabase(context.Background(), name); err != nil {
			t.Error(err)
		}
	})
	return u
}

// Stop stops the cluster if one was started; a later use fails.
func (s *Shared) Stop() error {
	s.once.Do(func() { s.err = errors.New("pgtest: the shared cluster was stopped before its first use") })
	if s.cluster == nil {
		return nil
	}
	return s.cluster.Stop()
}
