// Package jsonvalue holds the JSON values that steps hand to each other, in
// the form prompts, argv templates and map keys need them: every number
// kept as the exact text the agent wrote (json.Number, never a float64 that
// would turn 1234567890123456789 into 1.2345678901234568e+18 or 1e400 into
// nothing), and objects and arrays that print as JSON, so that
// {{ .Steps.plan.Output }} in a prompt passes the plan on as JSON rather than
// as Go's map[…] notation.
package jsonvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Object is a decoded JSON object. Templates index it like a map; printed,
// it is compact JSON.
type Object map[string]any

// Array is a decoded JSON array. Templates range over it like a slice;
// printed, it is compact JSON.
type Array []any

// String returns o as compact JSON.
func (o Object) String() string { return text(o) }

// String returns a as compact JSON.
func (a Array) String() string { return text(a) }

// Decode decodes one JSON value: objects become Object, arrays Array,
// numbers json.Number. Anything after the value but white space is an
// error.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	return Wrap(v), nil
}

// Wrap turns the maps and slices of a decoded value into Object and Array,
// in place.
func Wrap(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return Wrap(Object(x))
	case Object:
		for k, e := range x {
			x[k] = Wrap(e)
		}
		return x
	case []any:
		return Wrap(Array(x))
	case Array:
		for i, e := range x {
			x[i] = Wrap(e)
		}
		return x
	}
	return v
}

// Marshal encodes v as compact JSON, numbers as written and without
// escaping <, > and & (a prompt is not HTML).
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// text is v as JSON for printing. Marshal fails only on a value that did
// not come from JSON (a json.Number that is not a number); that prints as
// the error, never through fmt's %v, which would call String again.
func text(v any) string {
	b, err := Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}
