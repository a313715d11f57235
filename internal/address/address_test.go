package address

import (
	"slices"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	for _, tt := range []struct {
		id          string
		iteration   bool
		parent, top string
		name        string
		number      int
		segments    []string
	}{
		{id: "implement", parent: "", top: "implement", name: "implement", segments: []string{"implement"}},
		{id: "implement/3", iteration: true, parent: "implement", top: "implement", name: "implement", number: 3, segments: []string{"implement", "3"}},
		{id: "implement/3/code", parent: "implement/3", top: "implement", name: "code", segments: []string{"implement", "3", "code"}},
		{id: "outer/2/inner/1", iteration: true, parent: "outer/2/inner", top: "outer", name: "inner", number: 1, segments: []string{"outer", "2", "inner", "1"}},
		{id: "outer/2/inner/10/fix", parent: "outer/2/inner/10", top: "outer", name: "fix", segments: []string{"outer", "2", "inner", "10", "fix"}},
		// A stored id whose number is not one is an iteration without a number.
		{id: "loop/x", iteration: true, parent: "loop", top: "loop", name: "loop", number: 0, segments: []string{"loop", "x"}},
		{id: "loop/0", iteration: true, parent: "loop", top: "loop", name: "loop", number: 0, segments: []string{"loop", "0"}},
	} {
		t.Run(tt.id, func(t *testing.T) {
			p := Of(tt.id)
			if p.String() != tt.id || p.IsZero() {
				t.Errorf("Of(%q) = %q, zero %v", tt.id, p, p.IsZero())
			}
			if p.IsIteration() != tt.iteration {
				t.Errorf("IsIteration = %v, want %v", p.IsIteration(), tt.iteration)
			}
			if got := p.Parent().String(); got != tt.parent {
				t.Errorf("Parent = %q, want %q", got, tt.parent)
			}
			if (tt.parent == "") != p.Parent().IsZero() {
				t.Errorf("Parent().IsZero() = %v for parent %q", p.Parent().IsZero(), tt.parent)
			}
			if got := p.Top(); got != tt.top {
				t.Errorf("Top = %q, want %q", got, tt.top)
			}
			if got := p.StepName(); got != tt.name {
				t.Errorf("StepName = %q, want %q", got, tt.name)
			}
			if got := p.Number(); got != tt.number {
				t.Errorf("Number = %d, want %d", got, tt.number)
			}
			if got := p.Segments(); !slices.Equal(got, tt.segments) {
				t.Errorf("Segments = %q, want %q", got, tt.segments)
			}
		})
	}
}

// Building a path and taking it apart agree.
func TestBuild(t *testing.T) {
	it := Step("outer").Iteration(2).Inner("inner").Iteration(12)
	if it.String() != "outer/2/inner/12" || !it.IsIteration() || it.Number() != 12 || it.StepName() != "inner" {
		t.Fatalf("built %q: iteration %v number %d name %q", it, it.IsIteration(), it.Number(), it.StepName())
	}
	fix := it.Inner("fix")
	if fix.String() != "outer/2/inner/12/fix" || fix.IsIteration() || fix.Parent() != it || fix.Parent().Parent().Parent() != Step("outer").Iteration(2) {
		t.Fatalf("built %q, parents %q", fix, fix.Parent())
	}
	if got, err := Parse(fix.String()); err != nil || got != fix {
		t.Fatalf("Parse(%q) = %q, %v", fix, got, err)
	}
	if !(Path{}).IsZero() || (Path{}).Segments() != nil {
		t.Fatal("the zero Path addresses a row")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{"", "empty step path"},
		{"a//b", "empty segment"},
		{"a/", "empty segment"},
		{"/a", "empty segment"},
		{"loop/0", `"0" is not an iteration number`},
		{"loop/-1", `"-1" is not an iteration number`},
		{"loop/01", `"01" is not an iteration number`},
		{"loop/+1", `"+1" is not an iteration number`},
		{"loop/x/step", `"x" is not an iteration number`},
		{"a/1/b/2/c/99999999999999999999", `not an iteration number`},
	} {
		if _, err := Parse(tt.in); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tt.in, err, tt.err)
		}
	}
	for _, ok := range []string{"a", "a/1", "a/1/b", "a/12/b/3/c"} {
		if _, err := Parse(ok); err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		id, step string
		want     bool
	}{
		{"gate", "gate", true},
		{"loop/2/gate", "gate", true},
		{"loop/2/gate", "loop/2/gate", true},
		{"loop/2/bigate", "gate", false},
		{"gate2", "gate", false},
		{"loop/2/gate", "2/gate", true},
	} {
		if got := Of(tt.id).Names(tt.step); got != tt.want {
			t.Errorf("Of(%q).Names(%q) = %v, want %v", tt.id, tt.step, got, tt.want)
		}
	}
}
