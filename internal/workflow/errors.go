package workflow

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one mistake in a workflow file, located where it was written.
type Error struct {
	File   string // the workflow file as given to Load
	Line   int    // 1-based
	Column int    // 1-based
	Key    string // key path, e.g. steps[1].retry.backoff; "" for the document itself
	Msg    string
}

// Error formats the mistake as "file:line:col: key: msg", the form editors
// and terminals turn into a link.
func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Column, e.Key, e.Msg)
}

// Errors is every mistake found in a workflow file, in file order.
type Errors []*Error

// Error lists the mistakes one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// tidy sorts the errors by position and drops exact duplicates, which arise
// when a value inherited from defaults: is wrong for several steps.
func (es Errors) tidy() Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}
