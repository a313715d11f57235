package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeReadsManyOutputs kills a run of a 130-step chain after the
// outcome commit of its 129th step and resumes it: the resume restores
// and decodes the 129 stored outputs side by side (enough of them for
// two goroutines), and the last step's when and command read three of
// them, each of which must be the output of the step it names.
func TestResumeReadsManyOutputs(t *testing.T) {
	const n = 130
	var wf strings.Builder
	wf.WriteString("version: 1\nsteps:\n")
	for i := range n - 1 {
		fmt.Fprintf(&wf, "  - {id: s%d, run: [printf, '%d']}\n", i, i)
	}
	fmt.Fprintf(&wf, "  - id: s%d\n    when: 'steps.s100.output.stdout == \"100\"'\n", n-1)
	fmt.Fprintf(&wf, "    run: [/bin/sh, -c, 'echo \"$1 $2\" > out.txt', sh, '{{ .Steps.s3.Output.stdout }}', '{{ .Steps.s%d.Output.stdout }}']\n", n-3)
	p := newProject(t, wf.String(), nil)

	p.cadence([]string{fmt.Sprintf("CADENCE_FAILPOINT=after-outcome-commit:%d", n-1)}, "run", "--quiet").killed(t)
	if _, err := os.Stat(filepath.Join(p.dir, "out.txt")); !os.IsNotExist(err) {
		t.Fatalf("the last step ran before the kill (stat out.txt: %v)", err)
	}
	p.cadence(nil, "resume", "--quiet").exits(t, 0)
	got, err := os.ReadFile(filepath.Join(p.dir, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("3 %d\n", n-3); string(got) != want {
		t.Errorf("the last step wrote %q, want %q", got, want)
	}
}
