package attempt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// errOutsideProject reports a handoff path whose directory, once symbolic
// links are followed, is no longer inside the project.
var errOutsideProject = errors.New("leads outside the project directory")

// handoffFile returns the absolute path of a step's file handoff after
// checking that the directories on the way to it stay inside the project
// when their links are followed. The workflow loader checked the path as
// written; an agent can still replace a directory of it with a link to
// somewhere else, and cadence must neither delete nor read through that.
// The file itself is never followed (CheckFile opens it without following
// a link), so only its directory is resolved here.
func (r *Runner) handoffFile(workDir, rel string) (string, error) {
	abs := filepath.Join(workDir, rel)
	root, err := filepath.EvalSymlinks(workDir)
	if err != nil {
		return "", fmt.Errorf("resolve the project directory: %w", err)
	}
	dir := filepath.Dir(abs)
	// Resolve the deepest directory that exists; the rest is created
	// below it by cadence, as plain directories.
	existing := dir
	for {
		if _, err := os.Lstat(existing); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("handoff path %s: %w", rel, err)
	}
	if resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator)) {
		return "", fmt.Errorf("handoff path %s: its directory %w (to %s)", rel, errOutsideProject, resolved)
	}
	return abs, nil
}
