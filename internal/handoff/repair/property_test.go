package repair

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// gen builds random JSON values from a seeded source, with strings full of
// the text that trips naive repairers.
type gen struct{ r *rand.Rand }

var tricky = []string{
	"True", "None", "False", "null", "NaN", "//", "/*", "*/", "'", "it's", `"`, `\`,
	"{", "}", "[", "]", ",", ":", "```", "```json", "http://x.org/a", " ", "\n", "\t",
	"é", "😀", "“", "”", "‘", "’", "\x01", "a", "key", "0", "-1.5", "<b>&",
}

func (g gen) str() string {
	var b strings.Builder
	for range g.r.Intn(6) {
		b.WriteString(tricky[g.r.Intn(len(tricky))])
	}
	return b.String()
}

func (g gen) value(depth int) any {
	n := 8
	if depth > 4 {
		n = 5
	}
	switch g.r.Intn(n) {
	case 0:
		return nil
	case 1:
		return g.r.Intn(2) == 0
	case 2:
		return float64(g.r.Intn(2000) - 1000)
	case 3:
		return g.r.NormFloat64() * 1e3
	case 4:
		return g.str()
	case 5, 6:
		m := map[string]any{}
		for range g.r.Intn(5) {
			m[g.str()] = g.value(depth + 1)
		}
		return m
	default:
		a := make([]any, g.r.Intn(5))
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	}
}

// container returns a random object or array, the usual shape of a handoff.
func (g gen) container() any {
	for {
		switch v := g.value(0).(type) {
		case map[string]any, []any:
			return v
		}
	}
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("output %s does not decode: %v", b, err)
	}
	return v
}

func TestPropertyValidRoundTrip(t *testing.T) {
	g := gen{rand.New(rand.NewSource(1))}
	for i := range 3000 {
		v := g.container()
		compact, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		indented, _ := json.MarshalIndent(v, "", "  ")
		for _, in := range [][]byte{compact, indented} {
			r, err := Repair(in, Options{})
			if err != nil {
				t.Fatalf("value %d: Repair(%s): %v", i, in, err)
			}
			if len(r.Repairs) != 0 || r.Truncated {
				t.Fatalf("value %d: Repair(%s) applied %v", i, in, r.Repairs)
			}
			if got := decode(t, r.JSON); !reflect.DeepEqual(got, v) {
				t.Fatalf("value %d: Repair(%s) = %s, value changed", i, in, r.JSON)
			}
		}
	}
}

func TestPropertyPythonStyle(t *testing.T) {
	g := gen{rand.New(rand.NewSource(2))}
	for i := range 3000 {
		v := g.container()
		var b strings.Builder
		writePython(&b, v, g.r)
		in := b.String()
		r, err := Repair([]byte(in), Options{})
		if err != nil {
			t.Fatalf("value %d: Repair(%s): %v", i, in, err)
		}
		if got := decode(t, r.JSON); !reflect.DeepEqual(got, v) {
			t.Fatalf("value %d: Repair(%s)\n= %s, value changed", i, in, r.JSON)
		}
		if r.Truncated {
			t.Fatalf("value %d: Repair(%s) reports truncation", i, in)
		}
	}
}

// writePython writes v the way Python's repr writes a dict or list, with a
// trailing comma after some members.
func writePython(b *strings.Builder, v any, r *rand.Rand) {
	trailing := func() {
		if r.Intn(3) == 0 {
			b.WriteString(", ")
		}
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case float64:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	case string:
		b.WriteString(pyRepr(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writePython(b, e, r)
		}
		if len(v) > 0 {
			trailing()
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		first := true
		for k, e := range v {
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(pyRepr(k))
			b.WriteString(": ")
			writePython(b, e, r)
		}
		if len(v) > 0 {
			trailing()
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}

// pyRepr quotes s as Python's repr does: single quotes unless s holds a
// single quote and no double quote, \xHH for control characters.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, c := range []byte(s) {
		switch {
		case c == q || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// breakage is a way of writing JSON wrongly that the repairer must undo
// without changing the value.
type breakage struct {
	noColons     bool // {"a" 1}
	ellipses     bool // [1, 2, ...]
	dropInnerEnd bool // {"k": [1, 2}: the ']' of a non-empty array that ends an object is left out
	rawBackslash bool // "D:\data": a backslash before a byte that starts no escape is not doubled
}

// writeBroken writes v as JSON, broken as b says.
func writeBroken(sb *strings.Builder, v any, b breakage) {
	switch v := v.(type) {
	case []any:
		sb.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeBroken(sb, e, b)
		}
		if b.ellipses && len(v) > 0 {
			sb.WriteString(", ...")
		}
		sb.WriteByte(']')
	case map[string]any:
		sb.WriteByte('{')
		i := 0
		for k, e := range v {
			if i > 0 {
				sb.WriteString(", ")
			}
			i++
			writeBroken(sb, k, b)
			if !b.noColons {
				sb.WriteByte(':')
			}
			sb.WriteByte(' ')
			var inner strings.Builder
			writeBroken(&inner, e, b)
			s := inner.String()
			if a, isArray := e.([]any); isArray && len(a) > 0 && b.dropInnerEnd && i == len(v) {
				s = strings.TrimSuffix(s, "]")
			}
			sb.WriteString(s)
		}
		sb.WriteByte('}')
	case string:
		if !b.rawBackslash {
			q, _ := json.Marshal(v)
			sb.Write(q)
			return
		}
		sb.WriteByte('"')
		for i := 0; i < len(v); i++ {
			c := v[i]
			switch {
			// \a and \v are refused (they read differently in C and
			// JavaScript), so only the letters that read one way are left raw.
			case c == '\\' && i+1 < len(v) && isLetter(v[i+1]) && !strings.ContainsRune("abfnrtuvx", rune(v[i+1])):
				sb.WriteByte('\\')
			case c == '"' || c == '\\':
				sb.WriteByte('\\')
				sb.WriteByte(c)
			case c < 0x20:
				fmt.Fprintf(sb, `\u%04x`, c)
			default:
				sb.WriteByte(c)
			}
		}
		sb.WriteByte('"')
	default:
		q, _ := json.Marshal(v)
		sb.Write(q)
	}
}

// TestPropertyNewRepairs breaks random values in the ways agents do that
// the later repairs undo (missing colons, ellipses, a forgotten inner
// closer, unescaped backslashes, the whole value cut out of a string
// literal) and checks that every one comes back with its value unchanged.
func TestPropertyNewRepairs(t *testing.T) {
	g := gen{rand.New(rand.NewSource(3))}
	kinds := []struct {
		name   string
		b      breakage
		repair string
	}{
		{"no colons", breakage{noColons: true}, MissingColon},
		{"ellipses", breakage{ellipses: true}, Ellipsis},
		{"inner end dropped", breakage{dropInnerEnd: true}, MismatchedCloser},
		{"raw backslashes", breakage{rawBackslash: true}, InvalidEscapes},
		{"escaped quotes", breakage{}, EscapedQuotes},
	}
	applied := map[string]int{}
	for i := range 3000 {
		v := g.container()
		obj, isObj := v.(map[string]any)
		if !isObj || len(obj) == 0 {
			continue
		}
		if i%7 == 0 {
			obj[`a\d\q`] = []any{"x", `C:\data\logs`}
		}
		for _, k := range kinds {
			var sb strings.Builder
			writeBroken(&sb, obj, k.b)
			in := sb.String()
			if k.repair == EscapedQuotes {
				lit, _ := json.Marshal(in)
				in = string(lit[1 : len(lit)-1])
			}
			r, err := Repair([]byte(in), Options{})
			if err != nil {
				t.Fatalf("%s, value %d: Repair(%s): %v", k.name, i, in, err)
			}
			if got := decode(t, r.JSON); !reflect.DeepEqual(got, any(obj)) {
				t.Fatalf("%s, value %d: Repair(%s)\n= %s, value changed", k.name, i, in, r.JSON)
			}
			if r.Truncated {
				t.Fatalf("%s, value %d: Repair(%s) reports truncation", k.name, i, in)
			}
			for _, name := range r.Repairs {
				applied[name]++
			}
		}
	}
	for _, k := range kinds {
		if applied[k.repair] == 0 {
			t.Errorf("no input needed %s: the test no longer exercises it", k.repair)
		}
	}
}
