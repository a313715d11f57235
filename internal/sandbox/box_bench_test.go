//go:build linux

package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkBoxStart is what the box adds to starting a process: /bin/true
// run directly, and in a box with the default hidden paths and a private
// network.
func BenchmarkBoxStart(b *testing.B) {
	dir := b.TempDir()
	bwrap, err := Find("")
	if err != nil {
		b.Fatal(err)
	}
	prefix, err := Box{Home: dir, WorkDir: dir}.Argv(bwrap)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"direct", []string{"/bin/true"}},
		{"boxed", append(append([]string(nil), prefix...), "/bin/true")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if out, err := exec.Command(tc.argv[0], tc.argv[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/start")
		})
	}
}
