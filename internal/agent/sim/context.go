package sim

import (
	"encoding/json"
	"fmt"
)

// jsonContext encodes a help context decoded from YAML as one line of JSON.
// YAML maps may carry non-string keys, which JSON cannot; they are converted
// with fmt.
func jsonContext(v any) (string, error) {
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return "", fmt.Errorf("encode help context: %w", err)
	}
	return string(b), nil
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = normalize(val)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[fmt.Sprint(k)] = normalize(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = normalize(val)
		}
		return out
	default:
		return v
	}
}
