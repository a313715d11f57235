// Package sandbox builds the bubblewrap (bwrap) command line that runs an
// agent's or a command step's process tree in a box: the whole filesystem
// read-only, the step's working directory, the agent's configuration and
// the files cadence hands the process writable, a private /tmp, secrets
// (~/.ssh, cloud credentials, cadence's own state) replaced by empty
// directories, and, on request, no network at all.
//
// The box is a prefix of the process's argv: bwrap, its options, "--",
// then the program and its arguments. bwrap is started in the agent's
// process group like any program, so everything cadence does to that group
// (stop it, watch its CPU use, kill it when cadence dies, G6) still
// applies. bwrap is never asked for a session of its own (--new-session),
// which would take the process out of that group. Its own guarantees add
// to it: --die-with-parent kills the box when bwrap dies, and
// --unshare-pid makes the boxed program the first process of a PID
// namespace whose every process the kernel kills when it ends, so that a
// daemon the agent started cannot outlive it.
//
// What the box does not protect against is documented in README.md
// ("Sandbox"): with network on, a process can send anything it can read
// anywhere; the environment (API keys included) is passed through; files
// outside the hidden paths are readable; and a kernel bug defeats
// namespaces.
package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Program is bubblewrap's executable; Package the distribution package
// (Debian, Ubuntu, Fedora, Arch, Alpine) that installs it.
const (
	Program = "bwrap"
	Package = "bubblewrap"
)

// ErrNoBwrap is returned when bwrap cannot be found: a workflow that asks
// for a box never runs its processes without one.
var ErrNoBwrap = errors.New(Program + " not found on PATH: the sandbox needs bubblewrap (install the " + Package + " package, e.g. apt-get install " + Package + ")")

// DefaultHide are the paths every box hides, besides each .cadence
// directory: credentials a coding agent never needs to read, and the
// sockets of container engines, which a read-only filesystem does not stop
// a process from connecting to (and whose API is root on the host).
var DefaultHide = []string{"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.netrc", "~/.docker",
	"/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock", "/run/containerd/containerd.sock"}

// Config is a workflow's sandbox: settings. Paths are absolute or start
// with ~/ (the home directory of the boxed process).
type Config struct {
	// Network false runs the process with no network at all (a network
	// namespace of its own with only a loopback of its own).
	Network bool
	// Write lists paths writable besides the work directory.
	Write []string
	// Read lists paths made visible read-only: under a hidden path, such
	// as one file of ~/.ssh, or inside a writable one, to protect it.
	Read []string
	// Hide lists paths replaced by empty ones besides DefaultHide.
	Hide []string
}

// Box is one process's box: the workflow's Config and what cadence itself
// knows of the process.
type Box struct {
	Config
	// Home expands ~ in every path: the HOME the process is given.
	Home string
	// WorkDir is the step's working directory (the project, or an item's
	// worktree): writable, and where the process starts.
	WorkDir string
	// Writable are paths cadence hands the process to write (the agent's
	// configuration directory, the directory of its handoff file, its
	// CADENCE_OUTPUTS_DIR, the repository an item's worktree belongs
	// to): writable whatever is hidden. Missing ones are skipped.
	Writable []string
	// Readable are files cadence hands the process to read (a schema
	// file beside the attempt's output): visible read-only whatever is
	// hidden. Missing ones are skipped.
	Readable []string
	// StateDirs are cadence's own directories (each .cadence), hidden.
	StateDirs []string
}

// mount kinds, in the order they apply to one path: a later one wins.
const (
	kindHideDefault = iota // DefaultHide and StateDirs
	kindWrite              // WorkDir and Config.Write
	kindRead               // Config.Read
	kindHide               // Config.Hide
	kindOwnWrite           // Writable: cadence's own
	kindOwnRead            // Readable: cadence's own
)

type mount struct {
	path string // where it is in the box
	src  string // what it shows, for a bind: path itself but for a program reached by a symbolic link
	kind int
	dir  bool // for a hidden path: an empty directory rather than an empty file
}

// Argv returns the argv prefix that runs a program in the box: bwrap (the
// path given), its options, and "--". The program and its arguments
// follow it.
//
// Every path is resolved to what it names on the host (symbolic links
// followed); a hidden or readable path that does not exist is skipped, a
// write: path that does not exist is an error naming it. Mounts apply from
// the shallowest path to the deepest, so a path inside another takes its
// own setting: a read: file inside a hidden directory is visible, the
// handoff directory inside the hidden .cadence is writable.
func (b Box) Argv(bwrap string) ([]string, error) {
	if b.WorkDir == "" || !filepath.IsAbs(b.WorkDir) {
		return nil, fmt.Errorf("sandbox: the work directory %q is not an absolute path", b.WorkDir)
	}
	ms, err := b.mounts()
	if err != nil {
		return nil, err
	}
	args := []string{bwrap, "--die-with-parent", "--unshare-pid"}
	if !b.Network {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	var empty []string // hidden directories, made read-only once everything inside them is mounted
	for _, m := range ms {
		switch {
		case m.kind == kindWrite || m.kind == kindOwnWrite:
			args = append(args, "--bind", m.src, m.path)
		case m.kind == kindRead || m.kind == kindOwnRead:
			args = append(args, "--ro-bind", m.src, m.path)
		case m.dir:
			args = append(args, "--tmpfs", m.path)
			empty = append(empty, m.path)
		default:
			args = append(args, "--ro-bind", os.DevNull, m.path)
		}
	}
	for _, p := range slices.Backward(empty) {
		args = append(args, "--remount-ro", p)
	}
	return append(args, "--chdir", b.WorkDir, "--"), nil
}

// mounts lists the box's mounts on the host's real paths, shallowest
// first, one per path (the kind that wins on it).
func (b Box) mounts() ([]mount, error) {
	type want struct {
		path     string
		kind     int
		required bool
	}
	var ws []want
	add := func(kind int, required bool, paths ...string) {
		for _, p := range paths {
			ws = append(ws, want{path: p, kind: kind, required: required})
		}
	}
	add(kindHideDefault, false, DefaultHide...)
	add(kindHideDefault, false, b.StateDirs...)
	add(kindWrite, true, b.WorkDir)
	add(kindWrite, true, b.Write...)
	add(kindRead, false, b.Read...)
	add(kindHide, false, b.Hide...)
	add(kindOwnWrite, false, b.Writable...)
	add(kindOwnRead, false, b.Readable...)

	byPath := map[string]mount{}
	var links []mount
	for _, w := range ws {
		p, err := expand(w.path, b.Home)
		if err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(p)
		if errors.Is(err, fs.ErrNotExist) && !w.required {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: path %s: %w", w.path, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("sandbox: path %s: %w", w.path, err)
		}
		if real == "/" {
			return nil, fmt.Errorf("sandbox: path %s is the root directory: a box that hides, or opens for writing, the whole filesystem is no box", w.path)
		}
		if cur, ok := byPath[real]; !ok || w.kind >= cur.kind {
			byPath[real] = mount{path: real, src: real, kind: w.kind, dir: fi.IsDir()}
		}
		if w.kind == kindOwnRead && p != real {
			links = append(links, mount{path: p, src: real, kind: w.kind})
		}
	}
	for _, l := range links {
		// A program named by a symbolic link (node_modules/.bin/x) where
		// the box does not show the link (under the private /tmp, or a
		// hidden path): its path must start the program too. A link the
		// box shows is left alone (bwrap cannot mount over it).
		if _, taken := byPath[l.path]; !taken && hiddenIn(l.path, byPath) {
			byPath[l.path] = l
		}
	}
	ms := make([]mount, 0, len(byPath))
	for _, m := range byPath {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b mount) int {
		return cmp.Or(cmp.Compare(depth(a.path), depth(b.path)), cmp.Compare(a.path, b.path))
	})
	return ms, nil
}

// hiddenIn reports whether the box does not show host path p: it is under
// the private /tmp or under a hidden path of ms, and under no bind of a
// host path nearer to it.
func hiddenIn(p string, ms map[string]mount) bool {
	hidden, at := strings.HasPrefix(p, "/tmp/"), 1
	for _, m := range ms {
		if !strings.HasPrefix(p, m.path+string(filepath.Separator)) || depth(m.path) < at {
			continue
		}
		hidden = m.kind == kindHideDefault || m.kind == kindHide
		at = depth(m.path)
	}
	return hidden
}

// expand makes p absolute: ~ and ~/… are under home.
func expand(p, home string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home == "" || !filepath.IsAbs(home) {
			return "", fmt.Errorf("sandbox: cannot expand %s: no absolute home directory (HOME=%q)", p, home)
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("sandbox: path %q is not absolute", p)
	}
	return filepath.Clean(p), nil
}

// depth is the number of components of a clean absolute path.
func depth(p string) int { return strings.Count(p, string(filepath.Separator)) }

// Find returns the path of bwrap on path (a PATH value; cadence's own
// when empty), or ErrNoBwrap.
func Find(path string) (string, error) {
	if path == "" {
		p, err := exec.LookPath(Program)
		if err != nil {
			return "", ErrNoBwrap
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(d, Program)); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBwrap
}
