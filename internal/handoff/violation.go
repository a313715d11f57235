package handoff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Violation is one way a handoff fails its schema, precise enough to tell
// an agent what to change.
type Violation struct {
	// Pointer is the JSON pointer of the offending value; "/" is the root.
	Pointer string `json:"pointer"`
	// Keyword is the schema keyword that failed: type, required, enum, …
	Keyword string `json:"keyword"`
	// Expected is what the schema wants: "boolean", the missing field's
	// name for required, ">= 0" for minimum, …
	Expected string `json:"expected"`
	// Actual is what the value has: "string", "missing", "-1", …
	Actual string `json:"actual"`
	// Message is a short sentence saying the same.
	Message string `json:"message"`
}

// String renders the violation on one line, as in
// `/success: expected boolean, got string`.
func (v Violation) String() string {
	switch v.Keyword {
	case "required":
		return fmt.Sprintf("%s: missing required field %q", v.Pointer, v.Expected)
	case "additionalProperties", "unevaluatedProperties":
		if strings.Contains(v.Actual, `", "`) {
			return fmt.Sprintf("%s: properties %s are not allowed", v.Pointer, v.Actual)
		}
		return fmt.Sprintf("%s: property %s is not allowed", v.Pointer, v.Actual)
	}
	if v.Expected != "" {
		return fmt.Sprintf("%s: expected %s, got %s", v.Pointer, v.Expected, v.Actual)
	}
	return fmt.Sprintf("%s: %s", v.Pointer, v.Message)
}

// keywords are the validation keywords a violation can be attributed to;
// a keyword location is searched from its end for one of them, because it
// may end in a property name or an index ("dependentRequired/a/0").
var keywords = map[string]bool{
	"type": true, "required": true, "enum": true, "const": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true, "minLength": true, "maxLength": true, "pattern": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "contains": true,
	"minContains": true, "maxContains": true, "minProperties": true, "maxProperties": true,
	"additionalProperties": true, "additionalItems": true, "unevaluatedProperties": true,
	"unevaluatedItems": true, "dependencies": true, "dependentRequired": true,
	"propertyNames": true, "not": true, "oneOf": true, "anyOf": true, "allOf": true,
	"if": true, "then": true, "else": true, "contentEncoding": true, "contentMediaType": true,
	"contentSchema": true,
}

// flatten turns jsonschema's tree of errors into its leaves, one violation
// each (one per missing field for required), deduplicated and sorted by
// pointer so that prompts and records are deterministic.
func flatten(ve *jsonschema.ValidationError, instance any) []Violation {
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, leafViolations(e, instance)...)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sortViolations(out)
	return dedupe(out)
}

// leafViolations describes one leaf error.
func leafViolations(e *jsonschema.ValidationError, instance any) []Violation {
	ptr := e.InstanceLocation
	if ptr == "" {
		ptr = "/"
	}
	kw := keywordOf(e.KeywordLocation)
	val, found := valueAt(instance, e.InstanceLocation)
	actual := "missing"
	if found {
		actual = describeValue(val)
	}
	msg := e.Message
	v := Violation{Pointer: ptr, Keyword: kw, Actual: actual, Message: msg}
	switch kw {
	case "type":
		if exp, got, ok := strings.Cut(strings.TrimPrefix(msg, "expected "), ", but got "); ok {
			v.Expected, v.Actual = exp, got
		}
	case "required":
		names := quotedList(strings.TrimPrefix(msg, "missing properties: "))
		vs := make([]Violation, 0, len(names))
		for _, n := range names {
			vs = append(vs, Violation{Pointer: ptr, Keyword: kw, Expected: n, Actual: "missing",
				Message: fmt.Sprintf("missing required field %q", n)})
		}
		return vs
	case "additionalProperties", "unevaluatedProperties":
		names := quotedList(strings.TrimSuffix(strings.TrimPrefix(msg, kw+" "), " not allowed"))
		sort.Strings(names) // jsonschema lists them in map order
		v.Expected = "no other properties"
		v.Actual = quoteAll(names)
	case "enum":
		v.Expected = strings.TrimPrefix(strings.TrimPrefix(msg, "value must be one of "), "value must be ")
		if v.Expected != msg {
			v.Expected = "one of " + v.Expected
		}
	case "const":
		v.Expected = strings.TrimPrefix(msg, "value must be ")
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		if exp, _, ok := strings.Cut(strings.TrimPrefix(msg, "must be "), " but found "); ok {
			v.Expected = exp
		}
	case "minLength", "maxLength":
		if exp, got, ok := strings.Cut(strings.TrimPrefix(msg, "length must be "), ", but got "); ok {
			v.Expected, v.Actual = "length "+exp, "length "+got
		}
	case "minItems", "maxItems":
		v.Expected, v.Actual = boundsFromCount(msg, "items")
	case "minProperties", "maxProperties":
		v.Expected, v.Actual = boundsFromCount(msg, "properties")
	case "pattern":
		v.Expected = "a string matching " + strings.TrimPrefix(msg, "does not match pattern ")
	case "format":
		if i := strings.LastIndex(msg, " is not valid "); i >= 0 {
			v.Expected = "format " + msg[i+len(" is not valid "):]
		}
	}
	return []Violation{v}
}

// boundsFromCount parses "minimum 2 items required, but found 1 items"
// into ("at least 2 items", "1 items").
func boundsFromCount(msg, unit string) (expected, actual string) {
	var n, m int
	if _, err := fmt.Sscanf(msg, "minimum %d "+unit, &n); err == nil {
		expected = "at least " + count(n, unit)
	} else if _, err := fmt.Sscanf(msg, "maximum %d "+unit, &n); err == nil {
		expected = "at most " + count(n, unit)
	}
	if i := strings.Index(msg, "but found "); i >= 0 {
		if _, err := fmt.Sscanf(msg[i:], "but found %d", &m); err == nil {
			actual = count(m, unit)
		}
	}
	return expected, actual
}

// count renders "1 item", "2 items" from a plural unit.
func count(n int, plural string) string {
	if n == 1 {
		singular := strings.TrimSuffix(plural, "s")
		if plural == "properties" {
			singular = "property"
		}
		return "1 " + singular
	}
	return fmt.Sprintf("%d %s", n, plural)
}

// keywordOf picks the failing keyword out of a keyword location such as
// "/properties/success/type" or "/$ref/required".
func keywordOf(loc string) string {
	parts := strings.Split(loc, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if keywords[parts[i]] {
			return parts[i]
		}
	}
	if n := len(parts); n > 0 && parts[n-1] != "" {
		return parts[n-1]
	}
	return "false"
}

// quotedList parses the list jsonschema writes as `'a', 'b'`, where each
// name is a Go-quoted string re-wrapped in single quotes.
func quotedList(s string) []string {
	var names []string
	for i := 0; i < len(s); i++ {
		if s[i] != '\'' {
			continue
		}
		j := i + 1
		for j < len(s) && s[j] != '\'' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j > len(s) {
			j = len(s)
		}
		names = append(names, unquoteSingle(s[i+1:j]))
		i = j
	}
	return names
}

// unquoteSingle reverses jsonschema's single quoting; if that fails, the
// text is returned as it is.
func unquoteSingle(s string) string {
	d := strings.ReplaceAll(s, `\'`, `'`)
	d = strings.ReplaceAll(d, `"`, `\"`)
	if u, err := strconv.Unquote(`"` + d + `"`); err == nil {
		return u
	}
	return s
}

// quoteAll renders names as `"a", "b"`.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// valueAt resolves a JSON pointer in v.
func valueAt(v any, ptr string) (any, bool) {
	if ptr == "" || ptr == "/" {
		return v, true
	}
	cur := v
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// maxActualLen bounds how much of a value a violation quotes.
const maxActualLen = 60

// describeValue renders a value for a violation: scalars as JSON (cut
// short), containers by kind and size.
func describeValue(v any) string {
	switch c := v.(type) {
	case map[string]any:
		return fmt.Sprintf("object with %d properties", len(c))
	case []any:
		return fmt.Sprintf("array of %d items", len(c))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return cutString(string(b), maxActualLen)
}

// sortViolations orders violations by pointer (array indexes numerically),
// then keyword, then expected value.
func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		if c := comparePointers(vs[i].Pointer, vs[j].Pointer); c != 0 {
			return c < 0
		}
		if vs[i].Keyword != vs[j].Keyword {
			return vs[i].Keyword < vs[j].Keyword
		}
		return vs[i].Expected < vs[j].Expected
	})
}

// comparePointers compares JSON pointers token by token, numerically when
// both tokens are numbers.
func comparePointers(a, b string) int {
	at := strings.Split(strings.Trim(a, "/"), "/")
	bt := strings.Split(strings.Trim(b, "/"), "/")
	if a == "/" {
		at = nil
	}
	if b == "/" {
		bt = nil
	}
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == bt[i] {
			continue
		}
		ai, aerr := strconv.Atoi(at[i])
		bi, berr := strconv.Atoi(bt[i])
		if aerr == nil && berr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		if at[i] < bt[i] {
			return -1
		}
		return 1
	}
	return len(at) - len(bt)
}

// dedupe drops adjacent duplicates from a sorted list.
func dedupe(vs []Violation) []Violation {
	out := vs[:0]
	for _, v := range vs {
		if len(out) > 0 && v == out[len(out)-1] {
			continue
		}
		out = append(out, v)
	}
	return out
}
