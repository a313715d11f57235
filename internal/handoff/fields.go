package handoff

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// topLevelFields lists the properties of the schema's root object, with
// their types and whether they are required. A root that is only a local
// $ref (as in {"$ref": "#/$defs/result"}) is followed once. Declaration
// order is kept, read from the raw document, because prompts show the keys
// in the order the schema author wrote them.
func topLevelFields(raw []byte, doc any) []field {
	root, path := resolveRoot(doc)
	obj, ok := root.(map[string]any)
	if !ok {
		return nil
	}
	props, _ := obj["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	names := keysAt(raw, append(path, "properties"))
	if len(names) != len(props) {
		names = sortedKeys(props)
	}
	required := map[string]bool{}
	if list, ok := obj["required"].([]any); ok {
		for _, r := range list {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	fields := make([]field, 0, len(names))
	for _, n := range names {
		fields = append(fields, field{name: n, typ: describeType(doc, props[n]), required: required[n]})
	}
	return fields
}

// resolveRoot returns the root schema object and its path in the document,
// following a root that consists of a local $ref.
func resolveRoot(doc any) (any, []string) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return doc, nil
	}
	if _, has := obj["properties"]; has {
		return doc, nil
	}
	ref, _ := obj["$ref"].(string)
	path, ok := localRefPath(ref)
	if !ok {
		return doc, nil
	}
	if target := lookup(doc, path); target != nil {
		return target, path
	}
	return doc, nil
}

// localRefPath splits a same-document reference such as "#/$defs/x" into
// its unescaped pointer tokens.
func localRefPath(ref string) ([]string, bool) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, false
	}
	parts := strings.Split(ref[2:], "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return parts, true
}

// lookup follows object keys from doc; it returns nil when a key is absent.
func lookup(doc any, path []string) any {
	cur := doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// describeType names what a property schema expects, for prompts:
// "boolean", "string or null", "array", "one of \"a\", \"b\"", or "" when
// the schema does not say.
func describeType(doc, prop any) string {
	m, ok := prop.(map[string]any)
	if !ok {
		return ""
	}
	if ref, _ := m["$ref"].(string); ref != "" && m["type"] == nil {
		if path, ok := localRefPath(ref); ok {
			if target, ok := lookup(doc, path).(map[string]any); ok {
				m = target
			}
		}
	}
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		var names []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
		return strings.Join(names, " or ")
	}
	if enum, ok := m["enum"].([]any); ok && len(enum) > 0 {
		var vals []string
		for _, e := range enum {
			b, _ := json.Marshal(e)
			vals = append(vals, string(b))
		}
		return "one of " + strings.Join(vals, ", ")
	}
	if c, ok := m["const"]; ok {
		b, _ := json.Marshal(c)
		return string(b)
	}
	if _, ok := m["properties"]; ok {
		return "object"
	}
	if _, ok := m["items"]; ok {
		return "array"
	}
	return ""
}

// keysAt returns the keys of the object at path in raw, in document order,
// or nil when there is no object there.
func keysAt(raw []byte, path []string) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for _, want := range path {
		if !enterKey(dec, want) {
			return nil
		}
	}
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		s, _ := k.(string)
		keys = append(keys, s)
		if err := skipValue(dec); err != nil {
			return nil
		}
	}
	return keys
}

// enterKey reads an object from dec up to the value of key want, leaving
// the decoder positioned before that value.
func enterKey(dec *json.Decoder, want string) bool {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if k == want {
			return true
		}
		if err := skipValue(dec); err != nil {
			return false
		}
	}
	return false
}

// skipValue reads and discards one complete value from dec.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// sortedKeys returns m's keys in sorted order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
