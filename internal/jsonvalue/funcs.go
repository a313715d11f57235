package jsonvalue

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"text/template"

	"github.com/cadence-dev/cadence/internal/shellquote"
)

// Funcs are the functions prompts and argv templates may call, named as in
// the template libraries users know (Helm's, Hugo's):
//
//	json VALUE           compact JSON, numbers exact
//	join SEP LIST        the elements of a list, strings as they are, the rest as JSON
//	default DEF VALUE    VALUE, or DEF when VALUE is null, false, 0, "" or empty
//	indent N TEXT        TEXT with every line indented by N spaces
//	shq VALUE            a string, number or boolean quoted as one /bin/sh word
func Funcs() template.FuncMap {
	return template.FuncMap{
		"json":    toJSON,
		"join":    join,
		"default": orDefault,
		"indent":  indent,
		"shq":     shq,
	}
}

// shq quotes a scalar for /bin/sh in POSIX single quotes, a quote inside
// closing them, escaped, then reopening them, so that a shell reads it as
// exactly one word, whatever it holds.
func shq(v any) (string, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number, bool, int, int64, float64:
		s = fmt.Sprint(x)
	default:
		return "", fmt.Errorf("shq: want a string, number or boolean, got %s", Kind(v))
	}
	return shellquote.Quote(s), nil
}

func toJSON(v any) (string, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", fmt.Errorf("json: %w", err)
	}
	return string(b), nil
}

func join(sep string, list any) (string, error) {
	rv := reflect.ValueOf(list)
	if list == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return "", fmt.Errorf("join: %s is not a list", Kind(list))
	}
	parts := make([]string, rv.Len())
	for i := range parts {
		switch e := rv.Index(i).Interface().(type) {
		case string:
			parts[i] = e
		default:
			s, err := toJSON(e)
			if err != nil {
				return "", fmt.Errorf("join: element %d: %w", i, err)
			}
			parts[i] = s
		}
	}
	return strings.Join(parts, sep), nil
}

func orDefault(def, v any) any {
	if empty(v) {
		return def
	}
	return v
}

// empty reports what default replaces: null, false, zero, "" and empty
// objects and lists.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.String:
		return rv.Len() == 0
	}
	return rv.IsZero()
}

func indent(n int, text any) string {
	s, ok := text.(string)
	if !ok {
		s = fmt.Sprint(text)
	}
	pad := strings.Repeat(" ", max(n, 0))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

// Kind names the JSON type of a decoded value for messages: "an object",
// "a number", "null".
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case Object, map[string]any:
		return "an object"
	case Array, []any:
		return "an array"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("a %T", v)
}
