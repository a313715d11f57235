package attempt

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ageFile waits until the file's last change is more than stampMargin in
// the past, so that a read of it now may stamp it.
func ageFile(t *testing.T, path string) {
	t.Helper()
	for {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		changed := fi.ModTime()
		if _, st, ok := statStamp(fi); ok {
			changed = time.Unix(0, st.ctime)
		}
		if time.Since(changed) > 2*stampMargin {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ageTree waits until every file under dir was last changed more than
// stampMargin ago.
func ageTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if path == dir && os.IsNotExist(err) {
			return filepath.SkipDir // nothing written yet
		}
		if err == nil && d.Type().IsRegular() {
			ageFile(t, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
