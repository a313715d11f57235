//go:build linux

package attempt

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStampable(t *testing.T) {
	read := time.Date(2026, 11, 27, 12, 0, 0, 500_000_000, time.UTC)
	cases := []struct {
		name  string
		ctime time.Time
		want  bool
	}{
		{"changed a second before the read", read.Add(-time.Second), true},
		{"changed just past the margin before the read", read.Add(-stampMargin - time.Nanosecond), true},
		{"changed exactly the margin before the read", read.Add(-stampMargin), false},
		{"changed within the margin", read.Add(-time.Millisecond), false},
		{"changed after the read began", read.Add(time.Millisecond), false},
		{"whole seconds only", time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := stampable(outputStamp{ctime: c.ctime.UnixNano()}, read); got != c.want {
				t.Errorf("stampable(ctime %v, read %v) = %v, want %v", c.ctime, read, got, c.want)
			}
		})
	}
}

// A stamped file is known by its stat until anything touches it: a
// rewrite of the same size, a change of its mode, a file renamed over it,
// or its content no longer being what is wanted.
func TestOutputStampsSeeEveryChange(t *testing.T) {
	want := []byte(`{"exit_code":0,"stdout":"ok"}` + "\n")
	same := []byte(`{"exit_code":1,"stdout":"ok"}` + "\n") // the same size
	cases := []struct {
		name   string
		change func(t *testing.T, path string)
		want   []byte // what is wanted at the second check
		holds  bool   // the stamp still stands for the file
		right  bool   // a read finds the wanted content
	}{
		{"untouched", func(*testing.T, string) {}, want, true, true},
		{"rewritten in place, same size", func(t *testing.T, p string) { stampWrite(t, p, same) }, want, false, false},
		{"rewritten with the same bytes", func(t *testing.T, p string) { stampWrite(t, p, want) }, want, false, true},
		{"mode changed", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, want, false, true},
		{"replaced by a rename", func(t *testing.T, p string) {
			other := p + ".other"
			stampWrite(t, other, same)
			if err := os.Rename(other, p); err != nil {
				t.Fatal(err)
			}
		}, want, false, false},
		{"another content wanted", func(*testing.T, string) {}, same, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s0.json")
			stampWrite(t, path, want)
			ageFile(t, path)
			var s outputStamps
			if !s.check(path, want) {
				t.Fatal("the first read did not find the wanted content")
			}
			if !s.holds(openDir(t, path), filepath.Base(path), sha256.Sum256(want)) {
				t.Fatal("a file read when old enough was not stamped")
			}
			c.change(t, path)
			if got := s.holds(openDir(t, path), filepath.Base(path), sha256.Sum256(c.want)); got != c.holds {
				t.Errorf("after the change the stamp holds: %v, want %v", got, c.holds)
			}
			if got := s.check(path, c.want); got != c.right {
				t.Errorf("after the change a read finds the wanted content: %v, want %v", got, c.right)
			}
		})
	}
}

// A file read back as soon as it was written is right, but not stamped:
// a change in the same tick of the clock would keep its ctime.
func TestOutputStampsSkipAYoungFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s0.json")
	want := []byte("{}\n")
	stampWrite(t, path, want)
	var s outputStamps
	if !s.check(path, want) {
		t.Fatal("the read did not find the wanted content")
	}
	if s.holds(openDir(t, path), filepath.Base(path), sha256.Sum256(want)) {
		t.Error("a file changed within the margin before its read was stamped")
	}
}

// A longer file is told apart without being read whole.
func TestOutputStampsReadNoMoreThanWanted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s0.json")
	stampWrite(t, path, append([]byte("{}\n"), make([]byte, 1<<20)...))
	var s outputStamps
	if s.check(path, []byte("{}\n")) {
		t.Error("a file longer than the wanted content was found right")
	}
}

func stampWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openDir opens the directory of path, closed at the test's end.
func openDir(t *testing.T, path string) *os.File {
	t.Helper()
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// A step's output is encoded once per value: the same value again gives
// the same text without a new encoding, and another value under the same
// step id (the step of a later loop iteration) gives its own text.
func TestOutputContentIsEncodedOncePerValue(t *testing.T) {
	var s outputStamps
	first := map[string]any{"Output": map[string]any{"n": 1}}
	second := map[string]any{"Output": map[string]any{"n": 2}}
	steps := []struct {
		v      map[string]any
		text   string
		reused bool // the text of the call before, not a new encoding
	}{
		{first, `{"n":1}` + "\n", false},
		{first, `{"n":1}` + "\n", true},
		{second, `{"n":2}` + "\n", false},
		{first, `{"n":1}` + "\n", false},
	}
	var last []byte
	for i, st := range steps {
		e, err := s.content("a", st.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(e.text) != st.text || e.sum != sha256.Sum256([]byte(st.text)) {
			t.Errorf("call %d: %q (sum %x), want %q", i, e.text, e.sum, st.text)
		}
		if reused := last != nil && &e.text[0] == &last[0]; reused != st.reused {
			t.Errorf("call %d: reused the text before: %v, want %v", i, reused, st.reused)
		}
		last = e.text
	}
}
