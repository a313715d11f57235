package repair

// Names of the repairs, as recorded in Result.Repairs and in failed-handoff
// records. They are part of the product's contract: do not rename them.
const (
	BOM               = "bom"                 // a UTF-8 byte order mark was removed
	CodeFence         = "code_fence"          // the value was taken from a markdown fence
	Prose             = "prose"               // text around the value was dropped
	Comments          = "comments"            // // and /* */ comments were removed
	PythonLiterals    = "python_literals"     // True, False, None
	SingleQuotes      = "single_quotes"       // 'text' became "text"; \' became '
	SmartQuotes       = "smart_quotes"        // “text” and ‘text’ used as string quotes
	UnquotedKeys      = "unquoted_keys"       // {key: 1}
	TrailingComma     = "trailing_comma"      // [1,] and {"a":1,}
	MissingComma      = "missing_comma"       // [1 2] and {"a":1 "b":2}
	NonFinite         = "non_finite"          // NaN, Infinity, -Infinity, undefined became null
	ControlChars      = "control_chars"       // raw control characters inside strings were escaped
	NumberFormat      = "number_format"       // .5, +1, 1., 2e: a number in a form JSON forbids (leading zeros are unquoted_value: 0789 keeps its digits)
	StringEncodedJSON = "string_encoded_json" // "{\"a\":1}" became {"a":1}
	Concatenated      = "concatenated"        // several top-level values, no prose: one a line or comma-separated, gathered into an array; otherwise the last complete one was kept
	Truncated         = "truncated"           // open strings, arrays and objects were closed
	MissingColon      = "missing_colon"       // {"count" 3}: a quoted key and its value with no ':' between
	Ellipsis          = "ellipsis"            // [1, 2, ...] and [1, …]: an ellipsis standing for more members was dropped
	MismatchedCloser  = "mismatched_closer"   // {"a": [1}: the missing ']' was added, or a lone wrong closer corrected
	EscapedQuotes     = "escaped_quotes"      // {\"a\": 1}: JSON cut out of a string literal, without its outer quotes
	InnerQuotes       = "inner_quotes"        // "a 12" pipe": a '"' inside a string that was not escaped
	InvalidEscapes    = "invalid_escapes"     // "D:\data", "\d+": a backslash that starts no escape is kept as a backslash
	UnquotedValue     = "unquoted_value"      // {"name": John}, [0789], /re/: a bare value that is no JSON literal became a string, to the next delimiter or line end
	MissingQuote      = "missing_quote"       // {"a": "b, "c": 1} and {"a": b"}: a string missing its end or start quote
	Concatenation     = "concatenation"       // "a" + "b": the parts of a string concatenation were joined
	MissingValue      = "missing_value"       // {"a": } and {"a": ,}: a member with no value got null
	LeadingComma      = "leading_comma"       // [,1] and {,"a":1}: a comma before the first member was dropped
	RedundantCloser   = "redundant_closer"    // [{"a":1}}, ...]: a closer with nothing to close, followed by more members, was dropped
	SpecialWhitespace = "special_whitespace"  // a no-break, ideographic or zero-width space between tokens
	FunctionWrapper   = "function_wrapper"    // ObjectId("1"), NumberLong(2), callback({...}): a call around a value was removed
	BacktickQuotes    = "backtick_quotes"     // `text` (or `text´) used as string quotes
)

// repairID indexes names; the order here is irrelevant to the output order.
type repairID uint8

const (
	idBOM repairID = iota
	idCodeFence
	idProse
	idComments
	idPythonLiterals
	idSingleQuotes
	idSmartQuotes
	idUnquotedKeys
	idTrailingComma
	idMissingComma
	idNonFinite
	idControlChars
	idNumberFormat
	idStringEncodedJSON
	idConcatenated
	idTruncated
	idMissingColon
	idEllipsis
	idMismatchedCloser
	idEscapedQuotes
	idInnerQuotes
	idInvalidEscapes
	idUnquotedValue
	idMissingQuote
	idConcatenation
	idMissingValue
	idLeadingComma
	idRedundantCloser
	idSpecialWhitespace
	idFunctionWrapper
	idBacktickQuotes
	numRepairs
)

var names = [numRepairs]string{
	BOM, CodeFence, Prose, Comments, PythonLiterals, SingleQuotes, SmartQuotes,
	UnquotedKeys, TrailingComma, MissingComma, NonFinite, ControlChars,
	NumberFormat, StringEncodedJSON, Concatenated, Truncated, MissingColon,
	Ellipsis, MismatchedCloser, EscapedQuotes, InnerQuotes, InvalidEscapes,
	UnquotedValue, MissingQuote, Concatenation, MissingValue, LeadingComma,
	RedundantCloser, SpecialWhitespace, FunctionWrapper, BacktickQuotes,
}

// repairSet records repairs once each, in order of first application.
// It is a value type small enough to copy with a candidate.
type repairSet struct {
	seen  uint64
	n     uint8
	order [numRepairs]repairID
}

func (s *repairSet) add(id repairID) {
	if s.seen&(1<<id) != 0 {
		return
	}
	s.seen |= 1 << id
	s.order[s.n] = id
	s.n++
}

// repairMark is the state of a repairSet at one point, to go back to: a
// set only grows, so its count and bits say all.
type repairMark struct {
	seen uint64
	n    uint8
}

func (s *repairSet) mark() repairMark { return repairMark{s.seen, s.n} }

// undo forgets the repairs added since m.
func (s *repairSet) undo(m repairMark) { s.seen, s.n = m.seen, m.n }

func (s *repairSet) has(id repairID) bool { return s.seen&(1<<id) != 0 }

// merge appends the repairs of o not yet in s, keeping o's order.
func (s *repairSet) merge(o repairSet) {
	for _, id := range o.order[:o.n] {
		s.add(id)
	}
}

// names returns the repair names, or nil when nothing was repaired.
func (s *repairSet) names() []string {
	if s.n == 0 {
		return nil
	}
	out := make([]string, s.n)
	for i, id := range s.order[:s.n] {
		out[i] = names[id]
	}
	return out
}
