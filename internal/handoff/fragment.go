package handoff

import "github.com/cadence-dev/cadence/internal/handoff/extract"

// fragments marks the strictly valid values that are only part of a larger
// value the agent wrote: a value inside a candidate that failed to parse
// ([{"a":1}}, {"b":2}] yields {"a":1} and {"b":2} to a scanner that
// restarts after each failure), or an object closed too early, after which
// more of its members follow ({"a":1}, "b":2}). Handing such a fragment over
// would lose the rest without a word; the whole value is repaired or the
// output is refused instead.
//
// A failed candidate counts only when it looks like JSON (not "[INFO]"
// prose); its extent is found by matching brackets of the same kind,
// outside strings, skipping closers of the wrong kind. Extents are
// computed once each and a failure inside an extent already known starts
// none, so the work is linear in the output.
func fragments(output []byte, values []extract.Value, errs []*extract.Error) []bool {
	var spans [][2]int64
	covered := int64(-1)
	for _, e := range errs {
		if e.Kind != extract.ErrMalformed || e.Start < covered || !looksLikeJSON(output, e.Start) {
			continue
		}
		end := extentEnd(output, e.Start)
		spans = append(spans, [2]int64{e.Start, end})
		covered = end
	}
	out := make([]bool, len(values))
	k := 0
	for i, v := range values {
		for k < len(spans) && spans[k][1] <= v.Offset {
			k++
		}
		inside := k < len(spans) && spans[k][0] < v.Offset
		end := v.Offset + int64(len(v.Data))
		out[i] = inside || len(v.Data) > 0 && v.Data[0] == '{' && memberFollows(output, end)
	}
	return out
}

// extentEnd returns the offset just past the bracket that closes the one
// at output[start], matching kinds and skipping strings; a closer of the
// wrong kind is taken for a stray one. It is len(output) when the value
// is never closed.
func extentEnd(output []byte, start int64) int64 {
	var stack []byte
	for i := start; i < int64(len(output)); i++ {
		switch c := output[i]; c {
		case '"':
			for i++; i < int64(len(output)) && output[i] != '"' && output[i] != '\n'; i++ {
				if output[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) > 0 && (c == '}') == (stack[len(stack)-1] == '{') {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return i + 1
				}
			}
		}
	}
	return int64(len(output))
}

// memberFollows reports whether, after spaces, output[i:] continues an
// object: a ',' and then a quoted key and its ':'.
func memberFollows(output []byte, i int64) bool {
	i = skipSpace(output, i)
	if i >= int64(len(output)) || output[i] != ',' {
		return false
	}
	i = skipSpace(output, i+1)
	if i >= int64(len(output)) || output[i] != '"' {
		return false
	}
	for i++; i < int64(len(output)) && output[i] != '"' && output[i] != '\n'; i++ {
		if output[i] == '\\' {
			i++
		}
	}
	if i >= int64(len(output)) || output[i] != '"' {
		return false
	}
	i = skipSpace(output, i+1)
	return i < int64(len(output)) && output[i] == ':'
}
