package steps

import (
	"os"
	"strings"
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

// scratch is the directory every project of this test binary is made in,
// removed only when the binary ends. Removing each benchmark's files as it
// ends (as testing's TempDir does) would make the next benchmark pay for
// them: ext4 without a journal (this machine's root) does not reuse an
// inode freed in the last minute (five, while its table's block is
// dirty), and every file created scans past each such inode of its group,
// so a chain run after another chain's cleanup measured 4.3 ms per step
// where the same binary in a directory with no removal near it took 3.0.
var scratch = &shared[string]{
	make: func() (string, error) { return os.MkdirTemp("", "bench-steps-dirs-") },
	free: func(dir string) { os.RemoveAll(dir) },
}

// scratchDir is a new directory of tb's, kept until the test binary ends.
func scratchDir(tb testing.TB) string {
	root, err := scratch.get()
	if err != nil {
		tb.Fatalf("scratch directory: %v", err)
	}
	name := strings.NewReplacer("/", "-", "=", "-", " ", "-").Replace(tb.Name())
	dir, err := os.MkdirTemp(root, name+"-")
	if err != nil {
		tb.Fatalf("scratch directory: %v", err)
	}
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	cadenceBinary.release()
	sharedCluster.release()
	scratch.release()
	os.Exit(code)
}
