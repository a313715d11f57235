package ghsummary

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unescapeData and parseCommand decode a workflow command line the way
// the Actions runner does: ::NAME k=v,k=v::DATA, values percent-decoded.
func unescapeData(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%").Replace(s)
}

func parseCommand(t *testing.T, line string) (name string, props map[string]string, data string) {
	t.Helper()
	if !strings.HasPrefix(line, "::") {
		t.Fatalf("not a command: %q", line)
	}
	rest := line[2:]
	end := strings.Index(rest, "::")
	if end < 0 {
		t.Fatalf("no end of command: %q", line)
	}
	head, data := rest[:end], rest[end+2:]
	props = map[string]string{}
	name, ps, _ := strings.Cut(head, " ")
	for _, p := range strings.Split(ps, ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			props[k] = unescapeData(v)
		}
	}
	return name, props, unescapeData(data)
}

func TestAnnotations(t *testing.T) {
	anns := Annotations(loadRun(t, "hostile", OutcomeFailed))
	want := []struct{ level, title, message string }{
		{"warning", "cadence: step plan attempt 1", "agent exited 1 after a valid handoff\n::warning::second"},
		{"error", "cadence: step fix failed after 2 attempts",
			"schema: ```\n::error::pwned\n| a | b |\n</details><script>x</script>\r\n\x1b[31mred\nat /ok: expected boolean, got ````string````\n# not a heading\n(cadence inspect --step fix --attempt 2)"},
		{"error", "cadence: step each[b|`x`] failed after 1 attempt", "agent_exit: exit 3\n(cadence inspect --step each --attempt 1)"},
	}
	if len(anns) != len(want) {
		t.Fatalf("%d annotations, want %d: %v", len(anns), len(want), anns)
	}
	for i, a := range anns {
		line := a.String()
		if strings.ContainsAny(line, "\r\n") {
			t.Errorf("annotation %d spans lines: %q", i, line)
		}
		name, props, data := parseCommand(t, line)
		if name != want[i].level || props["title"] != want[i].title || data != want[i].message {
			t.Errorf("annotation %d decodes to %s %q %q, want %s %q %q", i, name, props["title"], data,
				want[i].level, want[i].title, want[i].message)
		}
	}
}

func TestAnnotationCut(t *testing.T) {
	a := Annotation{Level: "error", Title: "t", Message: strings.Repeat("x", 5000)}
	_, _, data := parseCommand(t, a.String())
	if len([]rune(data)) != maxAnnotation+1 || !strings.HasSuffix(data, "…") {
		t.Errorf("message of %d runes, want %d ending in …", len([]rune(data)), maxAnnotation+1)
	}
}

// parseOutputs reads a GITHUB_OUTPUT file as the runner does: name=value
// lines and name<<DELIM heredocs.
func parseOutputs(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if name, d, ok := strings.Cut(line, "<<"); ok {
			var val []string
			closed := false
			for sc.Scan() {
				if sc.Text() == d {
					closed = true
					break
				}
				val = append(val, sc.Text())
			}
			if !closed {
				t.Fatalf("heredoc %s<<%s never closed", name, d)
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		name, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("bad output line %q", line)
		}
		out[name] = v
	}
	return out
}

func TestFormatOutputs(t *testing.T) {
	// A value holding the first delimiters drawn makes the writer draw
	// again.
	delims := []string{"D1", "D1", "D2", "D3", "D4"}
	next := func() string { d := delims[0]; delims = delims[1:]; return d }
	outs := []Output{{"status", "D1"}, {"run_id", "r\nD2\nrun_id<<x"}, {"waiting_gates", ""}}
	got := parseOutputs(t, FormatOutputs(outs, next))
	want := map[string]string{"status": "D1", "run_id": "r\nD2\nrun_id<<x", "waiting_gates": ""}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestOutputs(t *testing.T) {
	r := loadRun(t, "hostile", OutcomeWaiting)
	got := parseOutputs(t, FormatOutputs(Outputs(OutcomeWaiting, &r), Delimiter))
	if got["status"] != "waiting" || got["run_id"] != "01JRUN" || got["waiting_gates"] != "review/1/ok" {
		t.Errorf("outputs %v", got)
	}
	got = parseOutputs(t, FormatOutputs(Outputs(OutcomeError, nil), Delimiter))
	if got["status"] != "error" || got["run_id"] != "" || got["waiting_gates"] != "" {
		t.Errorf("outputs without a run %v", got)
	}
}

func TestDelimiterRandom(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		d := Delimiter()
		if seen[d] || len(d) < 30 {
			t.Fatalf("delimiter %q repeated or short", d)
		}
		seen[d] = true
	}
}

// TestPublishAppends checks that Publish appends to files other steps
// wrote before, and writes only outputs when no run is known.
func TestPublishAppends(t *testing.T) {
	dir := t.TempDir()
	env := Env{SummaryFile: filepath.Join(dir, "summary.md"), OutputFile: filepath.Join(dir, "output")}
	for _, f := range []string{env.SummaryFile, env.OutputFile} {
		if err := os.WriteFile(f, []byte("before=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := loadRun(t, "succeeded", OutcomeSucceeded)
	var ann strings.Builder
	if err := Publish(env, OutcomeSucceeded, &r, &ann); err != nil {
		t.Fatal(err)
	}
	if err := Publish(env, OutcomeLocked, nil, &ann); err != nil {
		t.Fatal(err)
	}
	sum, _ := os.ReadFile(env.SummaryFile)
	if !strings.HasPrefix(string(sum), "before=1\n## cadence: run `01JOK` succeeded\n") || strings.Count(string(sum), "## cadence") != 1 {
		t.Errorf("summary file:\n%s", sum)
	}
	out, _ := os.ReadFile(env.OutputFile)
	if !strings.HasPrefix(string(out), "before=1\nstatus<<ghadelimiter_") || strings.Count(string(out), "status<<") != 2 {
		t.Errorf("output file:\n%s", out)
	}
	if ann.Len() != 0 {
		t.Errorf("annotations outside Actions: %q", ann.String())
	}
	if err := Publish(Env{OutputFile: filepath.Join(dir, "missing", "out")}, OutcomeFailed, nil, &ann); err == nil ||
		!strings.Contains(err.Error(), "GITHUB_OUTPUT") {
		t.Errorf("unwritable output file: %v", err)
	}
}
