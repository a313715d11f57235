package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// goreleaserConfig is the part of .goreleaser.yaml the release test reads.
type goreleaserConfig struct {
	Builds []struct {
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		NameTemplate string `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

// TestReleaseBuild: .goreleaser.yaml builds static binaries for the four
// targets, with archives named as the action's install script downloads
// them and SHA-256 checksums; and its ldflags, built once here for this
// platform with the template filled in, make `cadence version` print the
// release's version and commit. (Cross-building the four targets takes
// too long for the test suite; the ldflags are what can break unseen.)
func TestReleaseBuild(t *testing.T) {
	var cfg goreleaserConfig
	readYAML(t, filepath.Join("..", "..", ".goreleaser.yaml"), &cfg)
	if len(cfg.Builds) != 1 || len(cfg.Archives) != 1 {
		t.Fatalf("want one build and one archive: %+v", cfg)
	}
	b := cfg.Builds[0]
	if b.Main != "./cmd/cadence" || b.Binary != "cadence" || !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build %+v: want ./cmd/cadence as cadence with CGO_ENABLED=0", b)
	}
	slices.Sort(b.Goos)
	slices.Sort(b.Goarch)
	if !slices.Equal(b.Goos, []string{"darwin", "linux"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
		t.Errorf("targets %v × %v, want darwin, linux × amd64, arm64", b.Goos, b.Goarch)
	}
	if got := cfg.Archives[0].NameTemplate; got != "cadence_{{ .Os }}_{{ .Arch }}" {
		t.Errorf("archive name %q: scripts/action/install.sh downloads cadence_OS_ARCH.tar.gz", got)
	}
	if cfg.Checksum.NameTemplate != "checksums.txt" || cfg.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v: install.sh verifies sha256 sums in checksums.txt", cfg.Checksum)
	}

	ldflags := strings.NewReplacer("{{ .Version }}", "9.8.7", "{{ .Commit }}", "0123456789abcdef0123456789abcdef01234567").
		Replace(strings.Join(b.Ldflags, " "))
	if strings.Contains(ldflags, "{{") {
		t.Fatalf("ldflags use templates the test does not fill: %s", ldflags)
	}
	bin := filepath.Join(t.TempDir(), "cadence")
	// Built with the release's ldflags only: its -trimpath and
	// CGO_ENABLED=0 change every package's build cache key, and would
	// compile everything again, the pure-Go SQLite included (minutes).
	build := exec.Command("go", "build", "-o", bin, "-ldflags", ldflags, "./cmd/cadence")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build with the release ldflags: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("cadence version: %v", err)
	}
	want := []string{"cadence v9.8.7", "commit 0123456789abcdef0123456789abcdef01234567",
		runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); !slices.Equal(got, want) {
		t.Errorf("cadence version printed %q, want %q", got, want)
	}
}
