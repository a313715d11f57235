package coerce

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Names of the coercions, as recorded among a handoff's repairs. They are
// part of the product's contract: do not rename them.
const (
	StringToNumber  = "coerce_string_to_number"  // "5" where a number or integer is wanted
	StringToBoolean = "coerce_string_to_boolean" // "true", "False" where a boolean is wanted
	WrapArray       = "coerce_wrap_array"        // x where an array of x is wanted became [x]
	EnumCase        = "coerce_enum_case"         // " High" where the enum has "high"
	UnwrapObject    = "coerce_unwrap_object"     // {"result": {…}} where {…} is wanted
	DropNull        = "coerce_drop_null"         // an optional property that may not be null, set to null, was dropped
)

// Coercion is one change made to a value.
type Coercion struct {
	Name string `json:"name"`
	// Pointer is the JSON pointer of the value changed, in the value as
	// written (before any coercion); "/" is the root.
	Pointer string `json:"pointer"`
}

// String renders the coercion as a handoff's repairs record it:
// name@pointer, as in "coerce_string_to_number@/count".
func (c Coercion) String() string { return c.Name + "@" + c.Pointer }

// Limits that keep coercion cheap on hostile values: it does not look
// deeper than maxDepth levels, and gives up after maxSteps places tried.
// A handoff that needs coercion that deep or that often is better retried.
const (
	maxDepth = 64
	maxSteps = 10000
)

// Coerce returns the value that v coerces to under schema s, with the
// coercions applied (sorted by pointer), or ok=false when there is no such
// value or more than one. A v that already validates comes back as it is,
// with no coercions. v must be a value decoded by encoding/json (with
// UseNumber: numbers are json.Number); it is never modified, and the
// result shares the parts of v that were not changed.
func Coerce(v any, s *jsonschema.Schema) (out any, coercions []Coercion, ok bool) {
	if s == nil {
		return v, nil, true
	}
	c := &coercer{}
	out, coercions, ok = c.fix(v, s, "", 0, true)
	if !ok || !valid(s, out) {
		return nil, nil, false
	}
	slices.SortStableFunc(coercions, func(a, b Coercion) int { return strings.Compare(a.Pointer, b.Pointer) })
	for i := range coercions {
		if coercions[i].Pointer == "" {
			coercions[i].Pointer = "/"
		}
	}
	return out, coercions, true
}

// coercer carries the work done so far by one Coerce.
type coercer struct{ steps int }

// fix returns the only value valid against s that v coerces to. ptr is
// v's pointer in the value as written; root is set for the whole value,
// the only place an object wrapped in one key is unwrapped.
func (c *coercer) fix(v any, s *jsonschema.Schema, ptr string, depth int, root bool) (any, []Coercion, bool) {
	if valid(s, v) {
		return v, nil, true
	}
	if depth > maxDepth || c.steps >= maxSteps {
		return nil, nil, false
	}
	c.steps++
	cands := candidates{schema: s}
	reach := reachable(s)
	if str, isString := v.(string); isString {
		c.scalars(&cands, str, reach, ptr)
	}
	alts := alternatives(s)
	switch x := v.(type) {
	case map[string]any:
		for _, alt := range alts {
			if out, cs, ok := c.fixMembers(x, alt, ptr, depth); ok {
				cands.add(out, cs)
			}
		}
	case []any:
		for _, alt := range alts {
			if out, cs, ok := c.fixItems(x, alt, ptr, depth); ok {
				cands.add(out, cs)
			}
		}
	}
	if _, isArray := v.([]any); !isArray && v != nil && wantsType(reach, "array") {
		c.wrap(&cands, v, alts, ptr, depth)
	}
	if m, isObject := v.(map[string]any); isObject && root && len(m) == 1 {
		c.unwrap(&cands, m, s, ptr, depth)
	}
	return cands.one()
}

// scalars adds the readings of string str as a number, a boolean or an
// enum value that the schemas in reach ask for.
func (c *coercer) scalars(cands *candidates, str string, reach []*jsonschema.Schema, ptr string) {
	if (wantsType(reach, "number") || wantsType(reach, "integer")) && isNumber(str) {
		cands.add(json.Number(str), []Coercion{{StringToNumber, ptr}})
	}
	if wantsType(reach, "boolean") {
		switch {
		case strings.EqualFold(str, "true"):
			cands.add(true, []Coercion{{StringToBoolean, ptr}})
		case strings.EqualFold(str, "false"):
			cands.add(false, []Coercion{{StringToBoolean, ptr}})
		}
	}
	if e, ok := enumMatch(reach, str); ok {
		cands.add(e, []Coercion{{EnumCase, ptr}})
	}
}

// fixMembers fixes the members of object m that fail their schemas under
// one alternative of the object's schema, dropping optional members that
// are null and may not be. It reports false when no member needed fixing
// or one cannot be fixed.
func (c *coercer) fixMembers(m map[string]any, alt []*jsonschema.Schema, ptr string, depth int) (map[string]any, []Coercion, bool) {
	var out map[string]any
	var cs []Coercion
	for _, k := range slices.Sorted(maps.Keys(m)) {
		child := m[k]
		schemas := memberSchemas(alt, k)
		if len(schemas) == 0 || validAll(schemas, child) {
			continue
		}
		p := ptr + "/" + escapePointer(k)
		val, ccs, ok := c.fixAll(child, schemas, p, depth+1)
		if out == nil {
			out = maps.Clone(m)
		}
		switch {
		case ok:
			out[k] = val
			cs = append(cs, ccs...)
		case child == nil && !required(alt, k):
			delete(out, k)
			cs = append(cs, Coercion{DropNull, p})
		default:
			return nil, nil, false
		}
	}
	return out, cs, out != nil
}

// fixItems fixes the elements of array a that fail their schemas under
// one alternative of the array's schema.
func (c *coercer) fixItems(a []any, alt []*jsonschema.Schema, ptr string, depth int) ([]any, []Coercion, bool) {
	var out []any
	var cs []Coercion
	for i, e := range a {
		schemas := itemSchemas(alt, i)
		if len(schemas) == 0 || validAll(schemas, e) {
			continue
		}
		val, ecs, ok := c.fixAll(e, schemas, ptr+"/"+strconv.Itoa(i), depth+1)
		if !ok {
			return nil, nil, false
		}
		if out == nil {
			out = slices.Clone(a)
		}
		out[i] = val
		cs = append(cs, ecs...)
	}
	return out, cs, out != nil
}

// wrap adds the reading of v as the single element of an array. The
// element keeps v's pointer: it is where the value was written.
func (c *coercer) wrap(cands *candidates, v any, alts [][]*jsonschema.Schema, ptr string, depth int) {
	for _, alt := range alts {
		elem, cs := v, []Coercion(nil)
		if schemas := itemSchemas(alt, 0); len(schemas) > 0 && !validAll(schemas, v) {
			var ok bool
			if elem, cs, ok = c.fixAll(v, schemas, ptr, depth+1); !ok {
				continue
			}
		}
		cands.add([]any{elem}, append([]Coercion{{WrapArray, ptr}}, cs...))
	}
}

// unwrap adds the reading of an object of one key as the value of that
// key, when that value is an object or array that the whole schema
// accepts (after coercion).
func (c *coercer) unwrap(cands *candidates, m map[string]any, s *jsonschema.Schema, ptr string, depth int) {
	for k, inner := range m {
		switch inner.(type) {
		case map[string]any, []any:
		default:
			continue
		}
		p := ptr + "/" + escapePointer(k)
		if val, cs, ok := c.fix(inner, s, p, depth+1, false); ok {
			cands.add(val, append([]Coercion{{UnwrapObject, p}}, cs...))
		}
	}
}

// fixAll returns the only value valid against every schema in schemas
// that v coerces to.
func (c *coercer) fixAll(v any, schemas []*jsonschema.Schema, ptr string, depth int) (any, []Coercion, bool) {
	if len(schemas) == 1 {
		return c.fix(v, schemas[0], ptr, depth, false)
	}
	cands := candidates{all: schemas}
	for _, s := range schemas {
		if val, cs, ok := c.fix(v, s, ptr, depth, false); ok {
			cands.add(val, cs)
		}
	}
	return cands.one()
}

// candidates collects the distinct readings of one place that validate.
type candidates struct {
	schema *jsonschema.Schema   // the schema a reading must satisfy, or
	all    []*jsonschema.Schema // every one of these
	vals   []any
	cs     [][]Coercion
}

// add keeps the reading v, reached by coercions cs, when it validates and
// is not a reading already kept.
func (cands *candidates) add(v any, cs []Coercion) {
	if cands.schema != nil && !valid(cands.schema, v) || cands.all != nil && !validAll(cands.all, v) {
		return
	}
	for _, w := range cands.vals {
		if reflect.DeepEqual(v, w) {
			return
		}
	}
	cands.vals = append(cands.vals, v)
	cands.cs = append(cands.cs, cs)
}

// one returns the reading when there is exactly one.
func (cands *candidates) one() (any, []Coercion, bool) {
	if len(cands.vals) != 1 {
		return nil, nil, false
	}
	return cands.vals[0], cands.cs[0], true
}

// valid reports whether v satisfies s.
func valid(s *jsonschema.Schema, v any) bool { return s.Validate(v) == nil }

// validAll reports whether v satisfies every schema in schemas.
func validAll(schemas []*jsonschema.Schema, v any) bool {
	for _, s := range schemas {
		if !valid(s, v) {
			return false
		}
	}
	return true
}

// isNumber reports whether s is a number exactly as JSON writes one: no
// sign but '-', no leading zeros, no spaces, no hex, no NaN.
func isNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}
