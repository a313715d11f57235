package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes the directories and files named (a trailing / is a
// directory) under a fresh temporary directory and returns it.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// mountsOf returns the mount options of a bwrap argv after the fixed base
// (--ro-bind / /, --dev, --proc, --tmpfs /tmp) up to --chdir that name
// paths under root, one string per option with its operands, with root
// replaced by R.
func mountsOf(t *testing.T, argv []string, root string) []string {
	t.Helper()
	base := slices.Index(argv, "/tmp")
	end := slices.Index(argv, "--chdir")
	if base < 0 || end < 0 || argv[len(argv)-1] != "--" {
		t.Fatalf("argv has not the expected frame: %q", argv)
	}
	var out []string
	for i := base + 1; i < end; {
		n := 3
		if argv[i] == "--tmpfs" || argv[i] == "--remount-ro" {
			n = 2
		}
		if opt := strings.Join(argv[i:i+n], " "); strings.Contains(opt, root) {
			// Only the test's own paths: a machine's default hidden
			// paths (a container engine's socket) vary.
			out = append(out, strings.ReplaceAll(opt, root, "R"))
		}
		i += n
	}
	return out
}

func TestArgvMounts(t *testing.T) {
	root := tree(t, "home/.ssh/id_rsa", "home/.ssh/known_hosts", "home/.netrc", "home/.claude/",
		"proj/.cadence/out/", "proj/.cadence/outputs/run/step/", "proj/src/", "proj/vendor/", "shared/", "home/.kube/")
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "proj")
	tests := []struct {
		name string
		box  Box
		want []string
	}{
		{
			name: "defaults: work dir writable, .cadence and the home's secrets hidden, cadence's own paths writable inside them",
			box: Box{
				Home: home, WorkDir: proj, StateDirs: []string{filepath.Join(proj, ".cadence")},
				Writable: []string{filepath.Join(home, ".claude"), filepath.Join(proj, ".cadence/out"), filepath.Join(proj, ".cadence/outputs/run/step")},
			},
			want: []string{
				"--bind R/proj R/proj",
				"--bind R/home/.claude R/home/.claude",
				"--ro-bind /dev/null R/home/.netrc",
				"--tmpfs R/home/.ssh",
				"--tmpfs R/proj/.cadence",
				"--bind R/proj/.cadence/out R/proj/.cadence/out",
				"--bind R/proj/.cadence/outputs/run/step R/proj/.cadence/outputs/run/step",
				"--remount-ro R/proj/.cadence",
				"--remount-ro R/home/.ssh",
			},
		},
		{
			name: "read inside a hidden directory is visible, read inside the work dir is protected, hide and write add paths",
			box: Box{
				Config: Config{
					Read:  []string{"~/.ssh/known_hosts", filepath.Join(proj, "vendor")},
					Write: []string{filepath.Join(root, "shared")},
					Hide:  []string{"~/.kube", filepath.Join(proj, "src")},
				},
				Home: home, WorkDir: proj,
			},
			want: []string{
				"--bind R/proj R/proj",
				"--bind R/shared R/shared",
				"--tmpfs R/home/.kube",
				"--ro-bind /dev/null R/home/.netrc",
				"--tmpfs R/home/.ssh",
				"--tmpfs R/proj/src",
				"--ro-bind R/proj/vendor R/proj/vendor",
				"--ro-bind R/home/.ssh/known_hosts R/home/.ssh/known_hosts",
				"--remount-ro R/proj/src",
				"--remount-ro R/home/.ssh",
				"--remount-ro R/home/.kube",
			},
		},
		{
			name: "an explicit hide wins over write on the same path; cadence's own path wins over both",
			box: Box{
				Config:   Config{Write: []string{filepath.Join(root, "shared")}, Hide: []string{filepath.Join(root, "shared"), filepath.Join(proj, ".cadence/out")}},
				Home:     home,
				WorkDir:  proj,
				Writable: []string{filepath.Join(proj, ".cadence/out")},
			},
			want: []string{
				"--bind R/proj R/proj",
				"--tmpfs R/shared",
				"--ro-bind /dev/null R/home/.netrc",
				"--tmpfs R/home/.ssh",
				"--bind R/proj/.cadence/out R/proj/.cadence/out",
				"--remount-ro R/home/.ssh",
				"--remount-ro R/shared",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			argv, err := tc.box.Argv("/usr/bin/bwrap")
			if err != nil {
				t.Fatal(err)
			}
			if argv[0] != "/usr/bin/bwrap" || !slices.Contains(argv, "--die-with-parent") || !slices.Contains(argv, "--unshare-pid") {
				t.Errorf("argv lacks bwrap, --die-with-parent or --unshare-pid: %q", argv)
			}
			if slices.Contains(argv, "--new-session") {
				t.Errorf("argv has --new-session, which takes the process out of its group: %q", argv)
			}
			if i := slices.Index(argv, "--chdir"); i < 0 || argv[i+1] != proj {
				t.Errorf("argv does not start the process in %s: %q", proj, argv)
			}
			got := mountsOf(t, argv, root)
			if !slices.Equal(got, tc.want) {
				t.Errorf("mounts:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "))
			}
		})
	}
}

func TestArgvNetwork(t *testing.T) {
	proj := tree(t, "p/")
	for _, network := range []bool{true, false} {
		argv, err := Box{Config: Config{Network: network}, Home: proj, WorkDir: proj}.Argv("bwrap")
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(argv, "--unshare-net"); got == network {
			t.Errorf("network %v: --unshare-net in argv is %v: %q", network, got, argv)
		}
	}
}

func TestArgvErrors(t *testing.T) {
	root := tree(t, "proj/", "link-target/")
	proj := filepath.Join(root, "proj")
	if err := os.Symlink(filepath.Join(root, "link-target"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		box        Box
	}{
		{"missing write path", "missing: no such file", Box{Config: Config{Write: []string{filepath.Join(root, "missing")}}, Home: root, WorkDir: proj}},
		{"relative work dir", "not an absolute path", Box{Home: root, WorkDir: "proj"}},
		{"relative path", `path "rel" is not absolute`, Box{Config: Config{Read: []string{"rel"}}, Home: root, WorkDir: proj}},
		{"~ without a home", "no absolute home directory", Box{Config: Config{Hide: []string{"~/.kube"}}, WorkDir: proj}},
		{"the root directory", "is the root directory", Box{Config: Config{Write: []string{"/"}}, Home: root, WorkDir: proj}},
		{"a path that cleans to the root directory", "is the root directory", Box{Config: Config{Write: []string{"/tmp/.."}}, Home: root, WorkDir: proj}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.box.Argv("bwrap")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A program reached by a link under the private /tmp is mounted at
	// the link's path too; one inside the work dir is visible as it is.
	if err := os.Symlink(filepath.Join(root, "link-target"), filepath.Join(proj, "tool")); err != nil {
		t.Fatal(err)
	}
	argv, err := Box{Home: root, WorkDir: proj, Readable: []string{filepath.Join(root, "link"), filepath.Join(proj, "tool")}}.Argv("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	got := mountsOf(t, argv, root)
	for _, want := range []string{"--ro-bind R/link-target R/link-target", "--ro-bind R/link-target R/link"} {
		if !slices.Contains(got, want) {
			t.Errorf("mounts lack %q: %q", want, got)
		}
	}
	if slices.Contains(got, "--ro-bind R/link-target R/proj/tool") {
		t.Errorf("a link inside the work dir is mounted over: %q", got)
	}
	// A symbolic link is mounted where it leads.
	argv, err = Box{Config: Config{Write: []string{filepath.Join(root, "link")}}, Home: root, WorkDir: proj}.Argv("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mountsOf(t, argv, root), "--bind R/link-target R/link-target") {
		t.Errorf("the link is not followed: %q", argv)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	if _, err := Find(dir); err != ErrNoBwrap {
		t.Errorf("Find on a PATH without bwrap: %v, want ErrNoBwrap", err)
	}
	if !strings.Contains(ErrNoBwrap.Error(), "install the bubblewrap package") {
		t.Errorf("ErrNoBwrap does not name the package: %v", ErrNoBwrap)
	}
	fake := filepath.Join(dir, Program)
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find("relative:" + dir); err != nil || got != fake {
		t.Errorf("Find = %q, %v; want %s", got, err, fake)
	}
}
