package coerce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Result is a coerced JSON document.
type Result struct {
	// JSON is the coerced value as compact JSON. Object keys keep the
	// order in which the document first wrote them.
	JSON []byte
	// Value is the coerced value, as Coerce returns it.
	Value any
	// Coercions are the coercions applied, sorted by pointer.
	Coercions []Coercion
}

// Apply coerces the JSON document data to schema s, as Coerce does, and
// encodes the result. It reports false when data is not one JSON value or
// cannot be coerced; a document that already validates comes back with no
// coercions.
func Apply(data []byte, s *jsonschema.Schema) (Result, bool) {
	v, err := decode(data)
	if err != nil {
		return Result{}, false
	}
	out, cs, ok := Coerce(v, s)
	if !ok {
		return Result{}, false
	}
	var b bytes.Buffer
	if err := encode(&b, out, keyOrder(data)); err != nil {
		return Result{}, false
	}
	return Result{JSON: b.Bytes(), Value: out, Coercions: cs}, true
}

// decode decodes exactly one JSON value with UseNumber.
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decode: data after the value")
	}
	return v, nil
}

// keyOrder ranks the object keys of a JSON document by their first
// appearance in it, so that the coerced value can be written with the
// keys in the order the agent wrote them (exactly so when every object
// that shares keys writes them in the same order).
func keyOrder(data []byte) map[string]int {
	rank := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// A frame is an open container: whether it is an object, and whether
	// its next string is a key.
	type frame struct{ object, wantKey bool }
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return rank
		}
		top := len(stack) - 1
		if d, isDelim := tok.(json.Delim); isDelim {
			switch d {
			case '{', '[':
				stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
				continue
			default:
				stack = stack[:top]
				top--
			}
		} else if top >= 0 && stack[top].wantKey {
			if k, ok := tok.(string); ok {
				if _, seen := rank[k]; !seen {
					rank[k] = len(rank)
				}
				stack[top].wantKey = false
				continue
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].wantKey = true
		}
	}
}

// encode writes v as compact JSON, with object keys by rank (keys without
// one last, sorted) and without escaping HTML characters, as the agent's
// own JSON is kept.
func encode(b *bytes.Buffer, v any, rank map[string]int) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, c string) int {
			ra, oka := rank[a]
			rc, okc := rank[c]
			switch {
			case oka && okc:
				return ra - rc
			case oka != okc:
				if oka {
					return -1
				}
				return 1
			}
			return strings.Compare(a, c)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeScalar(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := encode(b, x[k], rank); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e, rank); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return encodeScalar(b, v)
	}
	return nil
}

// encodeScalar writes a string, number, boolean or null.
func encodeScalar(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	b.Truncate(b.Len() - 1) // the newline Encode adds
	return nil
}
