package workflow

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// at is where a value was written: a position and the key path that leads
// to it. Errors found long after decoding still point here.
type at struct {
	line, col int
	key       string
}

// field is a decoded value that remembers whether the file set it and where,
// so defaults can be merged key by key and later checks can name the line.
type field[T any] struct {
	v   T
	set bool
	at  at
}

// or returns f when the file set it, else the fallback d.
func (f field[T]) or(d field[T]) field[T] {
	if f.set {
		return f
	}
	return d
}

// get returns the value, or def when the file did not set it.
func (f field[T]) get(def T) T {
	if f.set {
		return f.v
	}
	return def
}

// entry is one key: value pair of a YAML mapping.
type entry struct {
	name string
	key  ast.Node
	val  ast.Node
	path string
}

// decoder walks the YAML syntax tree and collects every error it meets.
type decoder struct {
	file string
	errs Errors
}

func (d *decoder) fail(a at, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: a.line, Column: a.col, Key: a.key, Msg: fmt.Sprintf(format, args...)})
}

// unwrap strips anchors and tags, which carry no meaning for a workflow.
func unwrap(n ast.Node) ast.Node {
	for i := 0; i < 64; i++ {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return n
}

// where is the position of a node: its first key for a mapping, its own
// token otherwise.
func where(n ast.Node, key string) at {
	a := at{line: 1, col: 1, key: key}
	if n == nil {
		return a
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		if len(v.Values) > 0 {
			return where(v.Values[0], key)
		}
	case *ast.MappingValueNode:
		return where(v.Key, key)
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		a.line, a.col = tk.Position.Line, tk.Position.Column
	}
	return a
}

// valAt is where an entry's value was written; for an empty value (key:
// with nothing after it) that is the key itself.
func (e entry) valAt() at {
	if isNull(e.val) {
		return where(e.key, e.path)
	}
	return where(e.val, e.path)
}

// keyAt is where an entry's key was written.
func (e entry) keyAt() at { return where(e.key, e.path) }

func isNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := unwrap(n).(*ast.NullNode)
	return ok
}

// describe names a node's kind for "want X, got Y" messages.
func describe(n ast.Node) string {
	switch v := unwrap(n).(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + v.GetToken().Value
	case *ast.BoolNode:
		return "boolean " + v.GetToken().Value
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.AliasNode:
		return "an alias (aliases are not supported; use defaults:)"
	default:
		return "a " + strings.ToLower(v.Type().String())
	}
}

// entries lists the pairs of a mapping. A missing or empty value is an empty
// mapping, so a section whose keys are all commented out is accepted.
func (d *decoder) entries(n ast.Node, path string) ([]entry, bool) {
	if isNull(n) {
		return nil, true
	}
	var pairs []*ast.MappingValueNode
	switch v := unwrap(n).(type) {
	case *ast.MappingNode:
		pairs = v.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{v}
	default:
		d.fail(where(n, path), "want a mapping, got %s", describe(n))
		return nil, false
	}
	out := make([]entry, 0, len(pairs))
	for _, p := range pairs {
		k := unwrap(p.Key)
		if _, merge := k.(*ast.MergeKeyNode); merge {
			d.fail(where(k, path), "merge keys (<<) are not supported; use defaults:")
			continue
		}
		var name string
		switch kv := k.(type) {
		case *ast.StringNode:
			name = kv.Value
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
			name = kv.GetToken().Value
		default:
			d.fail(where(k, path), "want a plain key, got %s", describe(k))
			continue
		}
		out = append(out, entry{name: name, key: k, val: p.Value, path: join(path, name)})
	}
	return out, true
}

// fields walks a mapping whose keys are fixed, reporting unknown keys.
func (d *decoder) fields(n ast.Node, path string, known []string, fn func(e entry)) {
	es, _ := d.entries(n, path)
	for _, e := range es {
		if !slices.Contains(known, e.name) {
			d.fail(e.keyAt(), "unknown key (want %s)", alternatives(known, "or"))
			continue
		}
		fn(e)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// alternatives formats a list of words as "a, b or c".
func alternatives(words []string, conj string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// str decodes a string value; numbers and booleans are refused, not
// converted, so `env: {N: 08}` cannot silently become "8".
func (d *decoder) str(e entry) field[string] {
	switch v := unwrap(e.val).(type) {
	case *ast.StringNode:
		return field[string]{v: v.Value, set: true, at: e.valAt()}
	case *ast.LiteralNode:
		return field[string]{v: v.Value.Value, set: true, at: e.valAt()}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		d.fail(e.valAt(), "want a string, got %s (quote it)", describe(v))
	default:
		d.fail(e.valAt(), "want a string, got %s", describe(e.val))
	}
	return field[string]{}
}

// integer decodes a whole number in [lo, hi].
func (d *decoder) integer(e entry, lo, hi int) field[int] {
	v, ok := unwrap(e.val).(*ast.IntegerNode)
	if !ok {
		d.fail(e.valAt(), "want an integer, got %s", describe(e.val))
		return field[int]{}
	}
	var n int64
	switch x := v.Value.(type) {
	case int64:
		n = x
	case uint64:
		n = int64(min(x, math.MaxInt64))
	}
	if n < int64(lo) || n > int64(hi) {
		d.fail(e.valAt(), "%s is out of range (want %d to %d)", v.GetToken().Value, lo, hi)
		return field[int]{}
	}
	return field[int]{v: int(n), set: true, at: e.valAt()}
}

// number decodes a finite number that is at least lo.
func (d *decoder) number(e entry, lo float64) field[float64] {
	var f float64
	switch v := unwrap(e.val).(type) {
	case *ast.IntegerNode:
		switch n := v.Value.(type) {
		case int64:
			f = float64(n)
		case uint64:
			f = float64(n)
		}
	case *ast.FloatNode:
		f = v.Value
	default:
		d.fail(e.valAt(), "want a number, got %s", describe(e.val))
		return field[float64]{}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f < lo {
		d.fail(e.valAt(), "%s is out of range (want a number of at least %g)", unwrap(e.val).GetToken().Value, lo)
		return field[float64]{}
	}
	return field[float64]{v: f, set: true, at: e.valAt()}
}

func (d *decoder) boolean(e entry) field[bool] {
	v, ok := unwrap(e.val).(*ast.BoolNode)
	if !ok {
		d.fail(e.valAt(), "want true or false, got %s", describe(e.val))
		return field[bool]{}
	}
	return field[bool]{v: v.Value, set: true, at: e.valAt()}
}

// stringList decodes a list of strings; a single string is not promoted to a
// list, since `args: --verbose` is more often a mistake than a shorthand.
func (d *decoder) stringList(e entry) field[[]string] {
	seq, ok := unwrap(e.val).(*ast.SequenceNode)
	if !ok {
		d.fail(e.valAt(), "want a list of strings, got %s", describe(e.val))
		return field[[]string]{}
	}
	out := make([]string, 0, len(seq.Values))
	good := true
	for i, item := range seq.Values {
		s := d.str(entry{val: item, path: fmt.Sprintf("%s[%d]", e.path, i)})
		good = good && s.set
		out = append(out, s.v)
	}
	if !good {
		return field[[]string]{}
	}
	return field[[]string]{v: out, set: true, at: e.valAt()}
}

// strmap decodes a mapping of strings to strings.
func (d *decoder) strmap(e entry) field[map[string]string] {
	es, ok := d.entries(e.val, e.path)
	if !ok {
		return field[map[string]string]{}
	}
	out := make(map[string]string, len(es))
	for _, kv := range es {
		if s := d.str(kv); s.set {
			out[kv.name] = s.v
		}
	}
	return field[map[string]string]{v: out, set: true, at: e.valAt()}
}

// enum decodes a string that must be one of allowed.
func (d *decoder) enum(e entry, allowed []string) field[string] {
	s := d.str(e)
	if s.set && !slices.Contains(allowed, s.v) {
		d.fail(s.at, "unknown value %q (want %s)", s.v, alternatives(allowed, "or"))
		return field[string]{}
	}
	return s
}
