package steps

import (
	"os"
	"sync"
	"testing"
)

// shared is something expensive that the benchmarks of this test binary
// share (the cadence binary, the PostgreSQL cluster): made on first use,
// so that a plain `go test` makes none, and freed by TestMain.
type shared[T any] struct {
	make func() (T, error)
	free func(T)

	mu   sync.Mutex
	done bool
	v    T
	err  error
}

// get makes the value on the first call and returns it on every call.
func (s *shared[T]) get() (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.v, s.err = s.make()
		s.done = true
	}
	return s.v, s.err
}

// release frees the value if it was made.
func (s *shared[T]) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done && s.err == nil {
		s.free(s.v)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	cadenceBinary.release()
	sharedCluster.release()
	os.Exit(code)
}
