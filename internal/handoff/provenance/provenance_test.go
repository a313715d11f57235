package provenance

import (
	"strings"
	"testing"
)

// TestOf places the value marked by « and » in each text.
func TestOf(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Kind
		lang string
	}{
		{"whole output", `«{"a": 1}»`, Output, ""},
		{"whole output with space and BOM", "\uFEFF \n«{\"a\": 1}»\n\n", Output, ""},
		{"comment before and after", "/* note */ «{}» // end", Output, ""},
		{"JSONP call", "callback_123 («{}»);", Output, ""},
		{"JSONP call without space", "callback_123(«{}»);", Output, ""},
		{"stray closer after", "«{}»}", Output, ""},
		{"plain word before brace is prose", "callback «{}»", Prose, ""},
		{"the config was", "the config I read was «{\"retries\": 3}».", Prose, ""},
		{"go composite literal", "var m = map[string]string «{\"es\": \"Hola\",}»", Embedded, ""},
		{"index expression", "take x«[0]» first", Embedded, ""},
		{"call argument", "Call foo(«{\"a\": 1}») now", Embedded, ""},
		{"arrow function body", "const f = () => «{ a: 1 }»", Embedded, ""},
		{"member value", "  \"scripts\": «{\"build\": \"tsc\"}»,", Embedded, ""},
		{"after an HTML tag is prose", "<b>Result</b> «{\"a\": 1}»", Prose, ""},
		{"after markup is prose", "<img src=x></script><script>alert(2)</script> «{\"steps\": [1]}»", Prose, ""},
		{"after an arrow is embedded", "p->next «{ x: 1 }»", Embedded, ""},
		{"list item is prose", "Results:\n- «{\"a\": 1}»", Prose, ""},
		{"numbered list item is prose", "Results:\n  2. «{\"a\": 1}»", Prose, ""},
		{"assignment is embedded", "x = «[1]»", Embedded, ""},
		{"bytes that are not text are prose", "\xff\xfe prose \xc3\x28 «{\"ok\": true}» trailing", Prose, ""},
		{"a call before is embedded", "hello() «{ return 1 }»", Embedded, ""},
		{"after bold is prose", "**Result** «{\"a\": 1}»", Prose, ""},
		{"after a colon is prose", "The result: «{\"a\": 1}»", Prose, ""},
		{"after a sentence is prose", "Done. «{\"a\": 1}»", Prose, ""},
		{"json fence", "Here:\n```json\n«{\"a\": 1}»\n```\n", FenceJSON, "json"},
		{"JSON5 fence", "```JSON5\n«{a: 1}»\n```", FenceJSON, "JSON5"},
		{"unlabelled fence", "Done.\n```\n«{\"a\": 1}»\n```", FenceJSON, ""},
		{"tilde fence", "Done.\n~~~json\n«{\"a\": 1}»\n~~~", FenceJSON, "json"},
		{"rust fence", "Like so:\n```rust\nlet p = Point «{ x: 1 }»;\n```\n", CodeFence, "rust"},
		{"v fence", "```v\npub fn hello() string «{ return 'Hello' }»\n```", CodeFence, "v"},
		{"fence in a list item", "1. Run:\n   ```go\n   m := map[string]int«{\"a\": 1}»\n   ```\n", CodeFence, "go"},
		{"code in an unlabelled fence", "```\nm := map[string]int«{\"a\": 1}»\n```\n", Embedded, ""},
		{"part of an unlabelled fence after a colon", "```\ngot: «{\"a\": 1}»\n```\n", Prose, ""},
		{"unclosed fence runs to the end", "```js\nconst o = «{a: 1}»", CodeFence, "js"},
		{"longer closer closes", "````python\nx = «{'a': 1}»\n`````\n", CodeFence, "python"},
		{"after a closed fence is prose", "```go\nx := 1\n```\nThe result: «{\"a\": 1}» ok", Prose, ""},
		{"code span", "V code: `pub fn hello() string «{ return 'Hello, World!' }»` quoted.", CodeSpan, ""},
		{"double-backtick span", "Use ``fmt.Println(«{}»)`` here", CodeSpan, ""},
		{"unmatched backtick is literal", "a ` b «{\"a\": 1}» c", Prose, ""},
		{"span does not cross a blank line", "a ` b\n\n«{\"a\": 1}» c `", Prose, ""},
		{"after a span is prose", "`x` then «{\"a\": 1}» end", Prose, ""},
		{"one-line json fence", "Result: ```json «{\"a\": 1}»``` done", FenceJSON, "json"},
		{"part of an unlabelled fence is prose", "Run:\n```\n--- FAIL: got «[]» want [1]\n```\n", Prose, ""},
		{"comment in a json fence", "```json\n// the result\n«{\"a\": 1}»\n```", FenceJSON, "json"},
		{"one-line unlabelled fence", "```«{\"a\":\"b\"}»```", FenceJSON, ""},
		{"one-line rust fence is a code span", "see ```rust let p = Point «{ x: 1 }»``` here", CodeSpan, ""},
		{"one-line fence without json is a code span", "Use ``` «``» ``` here", CodeSpan, ""},
		{"prose", "I did it: «{\"status\": \"ok\"}» as asked.", Prose, ""},
		{"CRLF blank line ends a paragraph", "a `\r\n\r\n«{\"a\":1}» b `", Prose, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := strings.Index(tt.text, "«")
			text := strings.Replace(tt.text, "«", "", 1)
			end := strings.Index(text, "»")
			text = strings.Replace(text, "»", "", 1)
			if start < 0 || end < 0 {
				t.Fatalf("the test text marks no value")
			}
			got := Scan([]byte(text)).Of(start, end)
			if got.Kind != tt.want || got.Lang != tt.lang {
				t.Errorf("Of(%q) = %s %q, want %s %q", text[start:end], got.Kind, got.Lang, tt.want, tt.lang)
			}
		})
	}
}

// TestScanLinear: many unmatched backticks in one paragraph are read in
// linear time (the miss marks), not one search to the paragraph's end
// each.
func TestScanLinear(t *testing.T) {
	text := []byte(strings.Repeat("a ` b ", 200000) + `{"a": 1}`)
	m := Scan(text)
	if got := m.Of(len(text)-8, len(text)).Kind; got != Prose {
		t.Fatalf("value after unmatched backticks: %s, want prose", got)
	}
}

func TestKinds(t *testing.T) {
	for _, k := range []Kind{Output, FenceJSON, File} {
		if !k.MeantAsJSON() || k.IsCode() {
			t.Errorf("%s: meant as JSON, not code", k)
		}
	}
	for _, k := range []Kind{CodeSpan, CodeFence, Embedded} {
		if k.MeantAsJSON() || !k.IsCode() {
			t.Errorf("%s: code", k)
		}
	}
	if Prose.MeantAsJSON() || Prose.IsCode() {
		t.Errorf("prose is neither meant as JSON nor code")
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{"```json\n{}\n```", "`a` {\"b\":1}", "~~~\n[1]\n~~~", "``` x ```", "a\n\n`", "```json {\"a\":1}```"} {
		f.Add(s, 0, 1)
	}
	f.Fuzz(func(t *testing.T, s string, a, b int) {
		m := Scan([]byte(s))
		if a < 0 || b < a || b > len(s) {
			return
		}
		k := m.Of(a, b).Kind
		switch k {
		case Output, FenceJSON, Prose, CodeSpan, CodeFence, Embedded:
		default:
			t.Fatalf("Of(%d, %d) = %q", a, b, k)
		}
		for i := 1; i < len(m.regions); i++ {
			if m.regions[i].start < m.regions[i-1].end {
				t.Fatalf("regions overlap: %+v", m.regions)
			}
		}
	})
}
