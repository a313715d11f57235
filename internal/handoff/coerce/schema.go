package coerce

import (
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// conjunction returns s with every schema it requires as well: its $ref,
// $dynamicRef and $recursiveRef, and its allOf, recursively.
func conjunction(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || slices.Contains(out, s) {
			return
		}
		out = append(out, s)
		walk(s.Ref)
		walk(s.DynamicRef)
		walk(s.RecursiveRef)
		for _, a := range s.AllOf {
			walk(a)
		}
	}
	walk(s)
	return out
}

// alternatives returns the ways a value can satisfy s, each a list of
// schemas that must all hold: s's conjunction, and that conjunction with
// each option of an anyOf or oneOf in it. Members and items are fixed
// against one alternative at a time, since the options of an anyOf may
// want different things of the same member.
func alternatives(s *jsonschema.Schema) [][]*jsonschema.Schema {
	base := conjunction(s)
	alts := [][]*jsonschema.Schema{base}
	for _, m := range base {
		for _, o := range slices.Concat(m.AnyOf, m.OneOf) {
			alt := slices.Clone(base)
			for _, x := range conjunction(o) {
				if !slices.Contains(alt, x) {
					alt = append(alt, x)
				}
			}
			alts = append(alts, alt)
		}
	}
	return alts
}

// reachable returns every schema that applies to the same value as s:
// through $ref, allOf, anyOf, oneOf, then and else. Readings of a scalar
// are drawn from all of them; the whole schema then judges each reading.
func reachable(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	var walk func(*jsonschema.Schema)
	walk = func(s *jsonschema.Schema) {
		if s == nil || slices.Contains(out, s) {
			return
		}
		out = append(out, s)
		walk(s.Ref)
		walk(s.DynamicRef)
		walk(s.RecursiveRef)
		walk(s.Then)
		walk(s.Else)
		for _, x := range slices.Concat(s.AllOf, s.AnyOf, s.OneOf) {
			walk(x)
		}
	}
	walk(s)
	return out
}

// wantsType reports whether a schema in reach names type t.
func wantsType(reach []*jsonschema.Schema, t string) bool {
	for _, s := range reach {
		if slices.Contains(s.Types, t) {
			return true
		}
	}
	return false
}

// enumMatch returns the one string of the enums and consts in reach that
// str equals but for case and surrounding spaces.
func enumMatch(reach []*jsonschema.Schema, str string) (string, bool) {
	want := strings.TrimSpace(str)
	var found []string
	for _, s := range reach {
		for _, e := range slices.Concat(s.Enum, s.Constant) {
			if es, ok := e.(string); ok && strings.EqualFold(es, want) && !slices.Contains(found, es) {
				found = append(found, es)
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	return found[0], true
}

// memberSchemas returns the schemas that member k of an object must
// satisfy under alternative alt: its property schema, the pattern
// properties it matches, or else the additionalProperties schema.
func memberSchemas(alt []*jsonschema.Schema, k string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range alt {
		matched := false
		if p, ok := s.Properties[k]; ok {
			out = append(out, p)
			matched = true
		}
		for re, p := range s.PatternProperties {
			if re.MatchString(k) {
				out = append(out, p)
				matched = true
			}
		}
		if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok && !matched {
			out = append(out, ap)
		}
	}
	return out
}

// itemSchemas returns the schemas that element i of an array must satisfy
// under alternative alt (draft 2020-12 prefixItems and items, draft-07
// items and additionalItems).
func itemSchemas(alt []*jsonschema.Schema, i int) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, s := range alt {
		switch {
		case i < len(s.PrefixItems):
			out = append(out, s.PrefixItems[i])
			continue
		case s.Items2020 != nil:
			out = append(out, s.Items2020)
		}
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			out = append(out, items)
		case []*jsonschema.Schema:
			if i < len(items) {
				out = append(out, items[i])
			} else if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				out = append(out, ai)
			}
		}
	}
	return out
}

// required reports whether alternative alt requires member k.
func required(alt []*jsonschema.Schema, k string) bool {
	for _, s := range alt {
		if slices.Contains(s.Required, k) {
			return true
		}
	}
	return false
}
