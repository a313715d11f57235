package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// shape is what the loader knows before a run of a step's output: the
// JSON Schema it is held to, decoded, and where that schema comes from,
// for messages.
type shape struct {
	schema map[string]any
	from   string // "schemas/plan.json", or "loop review's output"
}

// outputShape returns what step id's output is known to be, or nil when
// nothing is: the step's handoff schema (an agent step, or a command step
// with a handoff), or for a loop {"iterations", "steps": {ID: output}}.
// A map step's output gathers its items' and is not checked.
func (l *loader) outputShape(id string) *shape {
	if sh, ok := l.shapes[id]; ok {
		return sh
	}
	var sh *shape
	s := l.w.Find(id)
	switch {
	case s == nil || l.mapped[id]:
	case s.Kind == KindLoop && s.Loop != nil:
		inner := map[string]any{}
		for _, in := range s.Loop.Steps {
			inner[in.ID] = map[string]any{}
			if x := l.outputShape(in.ID); x != nil {
				inner[in.ID] = x.schema
			}
		}
		sh = &shape{from: fmt.Sprintf("loop %s's output", id), schema: map[string]any{
			"type": "object", "additionalProperties": false,
			"properties": map[string]any{
				"iterations": map[string]any{"type": "integer"},
				"steps":      map[string]any{"type": "object", "properties": inner, "additionalProperties": false},
			},
		}}
	case s.Handoff.SchemaPath != "" && s.Handoff.Schema != nil && (s.Kind == KindAgent || s.Kind == KindCommand && s.Run != nil && s.Run.Handoff):
		_, abs, err := confine(l.dir, s.Handoff.SchemaPath)
		if err != nil {
			break
		}
		_, data, err := l.schemas.get(abs)
		var m map[string]any
		if err == nil && json.Unmarshal(data, &m) == nil {
			sh = &shape{schema: m, from: s.Handoff.SchemaPath}
		}
	}
	if l.shapes == nil {
		l.shapes = map[string]*shape{}
	}
	l.shapes[id] = sh
	return sh
}

// absent walks the schema along fields and returns a message for the
// first field the schema says the value cannot have: one not among the
// properties of an object closed by additionalProperties: false (or
// unevaluatedProperties: false), or any field of a value the schema
// types as a scalar or a list. It returns "" when each field may be
// there or the schema does not say (combinators, patternProperties, a
// $ref to another file). name is how the value is written, such as
// steps.plan.output, and is extended field by field.
func (sh *shape) absent(name string, fields []string) string {
	cur := sh.schema
	for _, f := range fields {
		cur = sh.resolve(cur)
		if cur == nil {
			return ""
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf", "if", "patternProperties", "dependentSchemas", "$ref"} {
			if _, ok := cur[k]; ok {
				return ""
			}
		}
		props, _ := cur["properties"].(map[string]any)
		if p, ok := props[f]; ok {
			if b, ok := p.(bool); ok && !b {
				return fmt.Sprintf("%s.%s, a field %s declares absent (false)", name, f, sh.from)
			}
			next, _ := p.(map[string]any)
			if next == nil {
				return ""
			}
			cur, name = next, name+"."+f
			continue
		}
		if t, ok := cur["type"].(string); ok && t != "object" {
			return fmt.Sprintf("%s.%s, but %s is %s in %s", name, f, name, jsonKind(t), sh.from)
		}
		if cur["additionalProperties"] != false && cur["unevaluatedProperties"] != false {
			return ""
		}
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		slices.Sort(names)
		has := "none"
		if len(names) > 0 {
			has = "only " + alternatives(names, "and")
		}
		return fmt.Sprintf("%s.%s, a field %s does not allow (%s)%s", name, f, sh.from, has, didYouMean(f, names))
	}
	return ""
}

// typeAt returns the one JSON type the schema gives the value at fields,
// or "" when it gives none or several.
func (sh *shape) typeAt(fields []string) string {
	cur := sh.resolve(sh.schema)
	for _, f := range fields {
		if cur == nil {
			return ""
		}
		props, _ := cur["properties"].(map[string]any)
		next, _ := props[f].(map[string]any)
		cur = sh.resolve(next)
	}
	if cur == nil {
		return ""
	}
	t, _ := cur["type"].(string)
	return t
}

// resolve follows a local $ref (#/$defs/x, #/definitions/x) of s; it
// returns s itself when it has none, and nil for one it cannot follow.
func (sh *shape) resolve(s map[string]any) map[string]any {
	for i := 0; s != nil && i < 16; i++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		if len(s) > 1 || !strings.HasPrefix(ref, "#/") {
			return nil // $ref beside other keywords, or to another document
		}
		var cur any = sh.schema
		for _, part := range strings.Split(ref[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			m, _ := cur.(map[string]any)
			cur = m[part]
		}
		s, _ = cur.(map[string]any)
	}
	return nil
}

// jsonKind is a JSON type with its article: "an array", "a string".
func jsonKind(t string) string {
	switch t {
	case "array", "integer":
		return "an " + t
	}
	return "a " + t
}

// didYouMean is "; did you mean X?" for the name among names nearest to
// name, when it is near enough to be a slip of the keyboard; "" otherwise.
func didYouMean(name string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), strings.ToLower(n)); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if bestD < 0 || bestD > max(1, len([]rune(name))/3) || bestD >= len([]rune(name)) {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", best)
}

// editDistance is the edit distance between a and b, in runes: the
// insertions, deletions, substitutions and swaps of two neighbours (the
// optimal string alignment distance) that turn one into the other.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
