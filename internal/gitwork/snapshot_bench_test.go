package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchRepo is a repository of n committed files in 10 directories, one
// of them then edited and one added, as a work tree mid-attempt.
func benchRepo(b *testing.B, n int) Repo {
	b.Helper()
	dir := b.TempDir()
	env := append(os.Environ(), "HOME="+b.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	r := Repo{Dir: dir, Env: env}
	ctx := context.Background()
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("package d\n\nconst N%d = %d\n", i, i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "--quiet"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "--quiet", "-m", "start"}} {
		if _, err := r.run(ctx, dir, args...); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "d0", "f0.go"), []byte("package d\n// edited\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.go"), []byte("package d\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkSnapshot is what an attempt pays before and after it in a git
// repository: one Snapshot of the work tree.
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{100, 5000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			r := benchRepo(b, n)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := r.Snapshot(ctx, "", "bench", ".cadence"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/snapshot")
		})
	}
}

// BenchmarkRestore is what restore_on_retry adds before a retry: a
// Restore of a tree with one file edited and one added since the snapshot.
func BenchmarkRestore(b *testing.B) {
	for _, n := range []int{100, 5000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			r := benchRepo(b, n)
			ctx := context.Background()
			head, err := r.Head(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := os.WriteFile(filepath.Join(r.Dir, "d1", "f1.go"), []byte("broken"), 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := r.Restore(ctx, head, ".cadence"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/restore")
		})
	}
}
