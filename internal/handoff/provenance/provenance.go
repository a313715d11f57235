// Package provenance tells where in an agent's output a JSON value was
// found: the whole output, a ```json or unlabelled markdown fence, prose,
// or code (an inline code span, a fence labelled with another language).
//
// The handoff pipeline decides from it what it may accept: a value the
// agent meant as JSON (the whole output, a json or unlabelled fence, a
// handoff file) may be repaired freely, a value in prose only in ways that
// cannot turn prose into data, and code is never a handoff: `{}` in
// Rust's println!("{}"), a struct literal, a JavaScript object in a
// ```js sample.
//
// Scan reads the output once and records its fences and code spans; Of
// then places a value by its offsets. The markdown read is the part of
// CommonMark that matters here: fences of three or more backticks or
// tildes (at the start of a line, after any indentation, so that fences in
// list items count), and inline code spans (a run of backticks closed by a
// run of the same length in the same paragraph).
package provenance

import "bytes"

// Kind is where a value was found.
type Kind string

// The kinds of provenance. Output, FenceJSON and File are meant as JSON;
// Prose is JSON inside prose; CodeSpan and CodeFence are code, never a
// handoff.
const (
	Output    Kind = "output"     // the whole output was the value
	FenceJSON Kind = "fence_json" // a ```json (jsonc, json5, …) or unlabelled fence
	File      Kind = "file"       // a handoff file
	Prose     Kind = "prose"      // JSON found inside prose
	CodeSpan  Kind = "code_span"  // inside an inline code span: code
	CodeFence Kind = "code_fence" // inside a fence labelled with another language: code
	// Embedded is a value in prose that continues a line of code or a
	// larger value: its bracket follows a word, a closing bracket or an
	// operator on its line (map[string]int{...}, Point {...}, x = [1],
	// foo({...})), or a quoted key and its colon ("scripts": {...}).
	Embedded Kind = "embedded"
)

// MeantAsJSON reports whether a value of this provenance was written as
// JSON, so that any repair of it restores what the agent meant.
func (k Kind) MeantAsJSON() bool { return k == Output || k == FenceJSON || k == File }

// IsCode reports whether the value was code, which is never a handoff.
func (k Kind) IsCode() bool { return k == CodeSpan || k == CodeFence || k == Embedded }

// region is a stretch of the output that is code or a fence's content.
type region struct {
	start, end int // content offsets, [start, end)
	kind       Kind
	lang       string // a fence's info word
}

// Map records the fences and code spans of one output.
type Map struct {
	text       []byte
	regions    []region // in output order, not overlapping
	first, end int      // the output's content without surrounding space (and BOM)
}

// Place is where one value was found.
type Place struct {
	Kind Kind
	// Lang is the info word of the fence around the value ("rust",
	// "json"), "" outside fences and for an unlabelled one.
	Lang string
}

// Of places the value at text[start:end] (offsets into the text given to
// Scan): the whole output, a fence, a code span, or prose.
func (m *Map) Of(start, end int) Place {
	if m.whole(start, end) {
		return Place{Kind: Output}
	}
	// Binary search for the last region starting at or before start.
	lo, hi := 0, len(m.regions)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.regions[mid].start <= start {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo > 0 {
		if r := m.regions[lo-1]; start < r.end {
			if r.kind == FenceJSON && !m.wholeOf(r.start, r.end, start, end) {
				// Part of a fence's content ("got [] want [1]" in test
				// output): not what the fence was written for.
				if m.embedded(start) {
					return Place{Kind: Embedded, Lang: r.lang}
				}
				return Place{Kind: Prose, Lang: r.lang}
			}
			return Place{Kind: r.kind, Lang: r.lang}
		}
	}
	if m.embedded(start) {
		return Place{Kind: Embedded}
	}
	return Place{Kind: Prose}
}

// embedded reports whether the value starting at start continues a line
// of code or a larger value rather than standing in prose: its bracket is
// glued to what precedes it (x[0], int{1}, f({...}), "{}" in a format
// string), or the word before it on its line is code (map[string]string
// {...}, () => {...}, x = [1]), or a quoted key and its colon
// ("scripts": {...}). JSON in prose starts a line or follows a plain word
// or a colon ("Result: {...}", "the config was {...}").
func (m *Map) embedded(start int) bool {
	i := start - 1
	if i < 0 || m.text[i] == '\n' || m.text[i] == '\r' {
		return false
	}
	if c := m.text[i]; c != ' ' && c != '\t' {
		return c != ':' || member(m.text, i)
	}
	for i >= 0 && (m.text[i] == ' ' || m.text[i] == '\t') {
		i--
	}
	end := i + 1
	for i >= 0 && !isSpace(m.text[i]) {
		i--
	}
	word := m.text[i+1 : end]
	if len(word) == 0 {
		return false
	}
	if word[len(word)-1] == ':' {
		return member(m.text, end-1)
	}
	if n := len(word); word[n-1] == '>' && (n < 2 || word[n-2] != '=' && word[n-2] != '-') {
		return false // the end of an HTML or XML tag: markup around prose
	}
	if listMarker(word) && bytes.TrimLeft(m.text[lineStart(m.text, start):start], " \t")[0] == word[0] {
		return false // "- {...}", "2. {...}": the first word of a list item
	}
	return codeWord(word)
}

// codeWord reports whether word is code rather than a word of prose: an
// identifier with code's punctuation in it or around it (map[string]int,
// main(), a->b), or an operator (=, =>, :=, ->). A word of letters, with
// markdown's ** or ~~ and a sentence's punctuation, is prose, and so is
// anything without an ASCII letter or digit in it (bytes that are not
// text).
func codeWord(word []byte) bool {
	alnum, punct, op := false, false, true
	for _, c := range word {
		switch {
		case isLetter(c) || c >= '0' && c <= '9' || c == '_':
			alnum, op = true, false
		case bytes.IndexByte([]byte("[](){}=<>;|&+/%\\$#@^"), c) >= 0:
			punct = true
		}
		if bytes.IndexByte([]byte("=<>-+*/:|&!%^~"), c) < 0 {
			op = false
		}
	}
	if op {
		return bytes.ContainsAny(word, "=<>")
	}
	return alnum && punct
}

// listMarker reports a markdown list item's marker: -, *, + or a number
// and . or ).
func listMarker(w []byte) bool {
	if len(w) == 1 {
		return w[0] == '-' || w[0] == '*' || w[0] == '+'
	}
	n := len(w) - 1
	if w[n] != '.' && w[n] != ')' {
		return false
	}
	for _, c := range w[:n] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return n > 0
}

// lineStart is the offset of the start of the line holding offset i.
func lineStart(text []byte, i int) int {
	if k := bytes.LastIndexByte(text[:i], '\n'); k >= 0 {
		return k + 1
	}
	return 0
}

// member reports whether the colon at text[i] follows a quoted key.
func member(text []byte, i int) bool {
	j := i - 1
	for j >= 0 && (text[j] == ' ' || text[j] == '\t') {
		j--
	}
	return j >= 0 && (text[j] == '"' || text[j] == '\'')
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// whole reports whether the value at text[start:end] is all the output
// holds besides what JSON tooling wraps around a value: comments, a
// JSONP call (`callback({...});`), a statement's `;` or `,`, and stray
// closers after it.
func (m *Map) whole(start, end int) bool {
	return m.wholeOf(m.first, m.end, start, end)
}

// wholeOf is whole for the content text[from:to] (of the output, or of a
// fence).
func (m *Map) wholeOf(from, to, start, end int) bool {
	for from < to && isSpace(m.text[from]) {
		from++
	}
	for to > from && isSpace(m.text[to-1]) {
		to--
	}
	if start < from || end > to {
		return start <= from && end >= to
	}
	i := skipComments(m.text, from, start)
	if i < start {
		// callback_123 (: the name of a JSONP call.
		for i < start && isIdent(m.text[i]) {
			i++
		}
		i = skipComments(m.text, i, start)
		if i >= start || m.text[i] != '(' {
			return false
		}
		if i = skipComments(m.text, i+1, start); i < start {
			return false
		}
	}
	for i := end; i < to; {
		switch c := m.text[i]; {
		case c == ')' || c == ';' || c == ',' || c == '}' || c == ']':
			i++
		case isSpace(c) || c == '/':
			j := skipComments(m.text, i, to)
			if j == i {
				return false
			}
			i = j
		default:
			return false
		}
	}
	return true
}

// skipComments returns the first offset at or after i, before limit, that
// is neither space nor inside a // or /* */ comment.
func skipComments(text []byte, i, limit int) int {
	for i < limit {
		switch {
		case isSpace(text[i]):
			i++
		case text[i] == '/' && i+1 < limit && text[i+1] == '/':
			for i < limit && text[i] != '\n' {
				i++
			}
		case text[i] == '/' && i+1 < limit && text[i+1] == '*':
			k := bytes.Index(text[i+2:limit], []byte("*/"))
			if k < 0 {
				return limit
			}
			i += k + 4
		default:
			return i
		}
	}
	return limit
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// bom is the UTF-8 byte order mark.
var bom = []byte{0xEF, 0xBB, 0xBF}

// Scan reads text once and records its fences and code spans.
func Scan(text []byte) *Map {
	m := &Map{text: text}
	body := 0
	if bytes.HasPrefix(text, bom) {
		body = len(bom)
	}
	m.first = body
	for m.first < len(text) && isSpace(text[m.first]) {
		m.first++
	}
	m.end = len(text)
	for m.end > m.first && isSpace(text[m.end-1]) {
		m.end--
	}
	s := scanner{text: text, m: m}
	s.run(body)
	return m
}

// scanner holds the state of one Scan.
type scanner struct {
	text []byte
	m    *Map
	// miss[n] is an offset from which no run of n backticks closes a span
	// before the paragraph ends: a later opener of that length is
	// literal without a second search, which keeps Scan linear.
	miss   map[int]int
	paraAt int // start of the current paragraph; miss is valid within it
}

func (s *scanner) run(i int) {
	text := s.text
	lineStart := true
	for i < len(text) {
		c := text[i]
		if lineStart {
			j := i
			for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r') {
				j++
			}
			if j < len(text) && text[j] == '\n' {
				s.paraAt = j + 1 // a blank line ends a paragraph
				s.miss = nil
				i = j + 1
				continue
			}
			if n := runLen(text, j); n >= 3 && (text[j] == '`' || text[j] == '~') {
				i = s.fence(j, n)
				s.paraAt, s.miss = i, nil
				continue
			}
			lineStart = false
			i = j
			continue
		}
		switch c {
		case '\n':
			lineStart = true
			i++
		case '`':
			n := runLen(text, i)
			i = s.span(i, n)
		default:
			i++
		}
	}
}

// fence records the fence whose opener of n marks starts at i, and returns
// where the text goes on after its closer (or the end of the text).
func (s *scanner) fence(i, n int) int {
	text := s.text
	mark := text[i]
	eol := indexFrom(text, i+n, '\n')
	info := bytes.TrimSpace(text[i+n : eol])
	lang := info
	if k := bytes.IndexAny(lang, " \t{"); k >= 0 {
		lang = lang[:k]
	}
	// A one-line fence, ```json {"a": 1}```: a backtick fence's info
	// string holds no backtick, so this is the inline kind.
	if mark == '`' && bytes.Contains(info, []byte("```")) {
		closeAt := i + n + bytes.Index(text[i+n:eol], []byte("```"))
		s.add(s.inline(i+n, closeAt, n))
		return min(eol+1, len(text))
	}
	start := min(eol+1, len(text))
	for j := start; j < len(text); {
		k := j
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if m := runLen(text, k); m >= n && text[k] == mark {
			if rest := bytes.TrimSpace(text[k+m : indexFrom(text, k+m, '\n')]); len(rest) == 0 {
				s.add(region{start: start, end: j, kind: fenceKind(lang), lang: string(lang)})
				return min(indexFrom(text, k+m, '\n')+1, len(text))
			}
		}
		j = indexFrom(text, j, '\n') + 1
	}
	s.add(region{start: start, end: len(text), kind: fenceKind(lang), lang: string(lang)})
	return len(text)
}

// span records the code span opened by the n backticks at i, if a run of
// n closes it in the same paragraph, and returns where the text goes on.
func (s *scanner) span(i, n int) int {
	text := s.text
	if at, ok := s.miss[n]; ok && at <= i {
		return i + n
	}
	for j := i + n; j < len(text); {
		switch text[j] {
		case '\n':
			k := j + 1
			for k < len(text) && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r') {
				k++
			}
			if k >= len(text) || text[k] == '\n' || runLen(text, k) >= 3 && (text[k] == '`' || text[k] == '~') {
				s.noClose(n, i)
				return i + n
			}
			j++
		case '`':
			m := runLen(text, j)
			if m == n {
				s.add(s.inline(i+n, j, n))
				return j + m
			}
			j += m
		default:
			j++
		}
	}
	s.noClose(n, i)
	return i + n
}

// inline is the region of a span's content text[start:end] opened by n
// backticks: a code span, or for three and more backticks and the json
// label a fence written on one line (```json {"a": 1}```), which agents
// write though CommonMark reads it as a code span.
func (s *scanner) inline(start, end, n int) region {
	if n < 3 {
		return region{start: start, end: end, kind: CodeSpan}
	}
	inner := s.text[start:end]
	at := len(inner) - len(bytes.TrimLeft(inner, " \t"))
	word := inner[at:]
	if k := bytes.IndexAny(word, " \t\n{["); k > 0 {
		word = word[:k]
		if rest := bytes.TrimSpace(inner[at+k:]); len(rest) > 0 && fenceKind(word) == FenceJSON {
			return region{start: start + at + k, end: end, kind: FenceJSON, lang: string(word)}
		}
	}
	if len(word) > 0 && (word[0] == '{' || word[0] == '[') {
		return region{start: start, end: end, kind: FenceJSON} // ```{"a": 1}```
	}
	// With another label or none, it is what CommonMark reads: a code span.
	return region{start: start, end: end, kind: CodeSpan}
}

func (s *scanner) noClose(n, at int) {
	if s.miss == nil {
		s.miss = map[int]int{}
	}
	s.miss[n] = at
}

func (s *scanner) add(r region) { s.m.regions = append(s.m.regions, r) }

// fenceKind classifies a fence by its info word: json and its dialects
// (jsonc, json5, jsonl) and no word at all are meant as JSON; any other
// language is code.
func fenceKind(lang []byte) Kind {
	if len(lang) == 0 || len(lang) >= 4 && bytes.EqualFold(lang[:4], []byte("json")) {
		return FenceJSON
	}
	return CodeFence
}

// runLen is the length of the run of text[i] starting at i.
func runLen(text []byte, i int) int {
	if i >= len(text) {
		return 0
	}
	n := 1
	for i+n < len(text) && text[i+n] == text[i] {
		n++
	}
	return n
}

// indexFrom is the index of the first c at or after i, or len(text).
func indexFrom(text []byte, i int, c byte) int {
	if i >= len(text) {
		return len(text)
	}
	if k := bytes.IndexByte(text[i:], c); k >= 0 {
		return i + k
	}
	return len(text)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
