// Package address builds and takes apart the ids of a run's step rows
// (SPEC §16.5): a top-level step's id ("implement"), an iteration of a
// loop ("implement/3"), a step inside that iteration ("implement/3/code"),
// and so on for loops inside loops ("outer/2/inner/1/fix"). A step id
// holds no slash, so the segments alternate step id and iteration number.
// Every package that reads or builds such a path does it through Path, so
// the rule lives in one place.
package address

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is the address of one row of a run's steps table. The zero Path
// addresses no row (the parent of a top-level step).
type Path struct{ id string }

// Of is the Path of a stored row id, taken as it is: ids the store holds
// were built by this package. Parse checks an id from elsewhere.
func Of(id string) Path { return Path{id: id} }

// Step is the Path of a top-level step.
func Step(id string) Path { return Path{id: id} }

// Parse checks that s is a well-formed row id: no empty segment, and a
// positive iteration number, written without leading zeros or sign, after
// each loop step.
func Parse(s string) (Path, error) {
	if s == "" {
		return Path{}, fmt.Errorf("empty step path")
	}
	for i, seg := range strings.Split(s, "/") {
		if seg == "" {
			return Path{}, fmt.Errorf("step path %q has an empty segment", s)
		}
		if i%2 == 1 {
			if n, err := strconv.Atoi(seg); err != nil || n < 1 || strconv.Itoa(n) != seg {
				return Path{}, fmt.Errorf("step path %q: %q is not an iteration number (1, 2, …)", s, seg)
			}
		}
	}
	return Path{id: s}, nil
}

// String is the row id.
func (p Path) String() string { return p.id }

// IsZero reports whether p addresses no row.
func (p Path) IsZero() bool { return p.id == "" }

// Iteration is the row of iteration n of the loop step at p.
func (p Path) Iteration(n int) Path { return Path{id: p.id + "/" + strconv.Itoa(n)} }

// Inner is the row of step inside the iteration at p.
func (p Path) Inner(step string) Path { return Path{id: p.id + "/" + step} }

// IsIteration reports whether p addresses an iteration of a loop
// (LOOP/N, A/1/B/2) rather than a step.
func (p Path) IsIteration() bool { return strings.Count(p.id, "/")%2 == 1 }

// Parent is the row that holds p's: an inner step's iteration, an
// iteration's loop step; the zero Path for a top-level step.
func (p Path) Parent() Path {
	i := strings.LastIndexByte(p.id, '/')
	if i < 0 {
		return Path{}
	}
	return Path{id: p.id[:i]}
}

// Top is the top-level step p lies in (p's own id for a top-level step).
func (p Path) Top() string {
	top, _, _ := strings.Cut(p.id, "/")
	return top
}

// StepName is the workflow step the row belongs to: the last step segment
// (implement/3/code is step code; outer/2/inner/1, an iteration, is step
// inner). Step ids are unique across a workflow, so the name finds the
// step's definition.
func (p Path) StepName() string {
	if p.IsIteration() {
		return p.Parent().last()
	}
	return p.last()
}

// Number is the number of the iteration p addresses, 0 when p addresses
// a step or its last segment is not a positive number.
func (p Path) Number() int {
	if !p.IsIteration() {
		return 0
	}
	n, err := strconv.Atoi(p.last())
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// Names reports whether step, as a person types it, names the row: its
// whole path, or its step's id at the end of it (gate ends gate's row and
// loop/2/gate's alike).
func (p Path) Names(step string) bool {
	return p.id == step || strings.HasSuffix(p.id, "/"+step)
}

// Segments are the path's segments, step ids and iteration numbers
// alternating.
func (p Path) Segments() []string {
	if p.id == "" {
		return nil
	}
	return strings.Split(p.id, "/")
}

// last is the path's last segment.
func (p Path) last() string { return p.id[strings.LastIndexByte(p.id, '/')+1:] }
