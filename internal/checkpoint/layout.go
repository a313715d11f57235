package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"regexp"
	"strings"
)

// CadenceDir is the state directory inside a project: the state database,
// the lock, and the files a run writes beside its rows (handoffs/,
// attempts/, failed_handoffs/).
const CadenceDir = ".cadence"

// UnitDir is the directory of a unit's files under base (attempts,
// failed_handoffs) in the project dir: base/RUN/STEP for a step,
// base/RUN/STEP/NAME for an item, NAME being its key made safe (SafeName).
func UnitDir(dir, base string, u Unit) string {
	d := filepath.Join(dir, CadenceDir, base, u.RunID, u.StepID)
	if u.Item != "" {
		d = filepath.Join(d, SafeName(u.Item))
	}
	return d
}

// EnvelopePath is where a unit's accepted handoff is written, relative to
// the project directory: .cadence/handoffs/RUN/STEP.json for a step,
// .cadence/handoffs/RUN/STEP/NAME.json for an item.
func EnvelopePath(u Unit) string {
	if u.Item == "" {
		return filepath.Join(CadenceDir, "handoffs", u.RunID, u.StepID+".json")
	}
	return filepath.Join(CadenceDir, "handoffs", u.RunID, u.StepID, SafeName(u.Item)+".json")
}

// plainKey is a key that is already safe as a file name and as a part of a
// git branch name.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// SafeName turns an item's key into one file name that is also valid in a
// branch name: the key itself when it is plain, else its plain characters
// (at most 40), "=" and a hash of the whole key, so that two keys never
// share a name ("=" is never in a plain key). The key may come from an
// agent's handoff, and no path under .cadence/ is derived from agent
// output as it is.
func SafeName(key string) string {
	if plainKey.MatchString(key) && !strings.HasSuffix(key, ".") && !strings.HasSuffix(key, ".lock") && !strings.Contains(key, "..") {
		return key
	}
	b := make([]byte, 0, 40)
	for i := 0; i < len(key) && len(b) < 40; i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
	}
	sum := sha256.Sum256([]byte(key))
	return string(b) + "=" + hex.EncodeToString(sum[:6])
}

// RelPath returns path relative to the project directory dir when it is
// inside it, slash-separated, for display and for the paths the store
// records; other paths are returned as they are.
func RelPath(dir, path string) string {
	if !filepath.IsAbs(path) {
		return filepath.ToSlash(path)
	}
	if rel, err := filepath.Rel(dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}
