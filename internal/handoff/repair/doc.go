// Package repair turns the almost-JSON that coding agents hand over into
// strict JSON, deterministically and in linear time.
//
// Agents wrap their handoff in prose and markdown fences, write Python
// literals and single quotes, forget or double commas, and get cut off
// mid-value. Repair finds the handoff in such text with a tokenizer (never
// with regular expressions over raw text, which cannot tell a quote inside
// a string from one outside), rewrites it as compact JSON and names every
// repair it applied, so that a failed-handoff record can say what was fixed.
//
// The content of strings is never changed: only their quoting and escaping
// are, so every string decodes to the value the agent wrote. A backslash
// that starts no escape ("D:\data", "\d+") is the agent's backslash and is
// kept as one. What cannot be read one way is refused rather than guessed:
// \a and \v (control characters in C and Python, letters in JavaScript),
// a \u escape cut short by the end quote, and raw control characters that
// no text holds, such as NUL.
//
// A few repairs choose between readings: a '"' inside a string that the
// agent did not escape, a closer of the wrong kind. Each prefers the reading
// under which the rest of the value parses, judged by a look at what follows
// that never goes past the next quote or token, and each is recorded by name
// (inner_quotes, mismatched_closer) so that a person sees the guess. Valid
// JSON never reaches these branches.
//
// Strictly valid input comes back compacted, with the same value and no
// repairs. It is recognised in the same single pass that repairs: a parse
// that applied no repair and spans the input is the strict parse. A separate
// strict pre-pass (encoding/json) would read truncated input twice, since a
// cut-off value only turns out invalid at its very end; the single pass
// reads valid input faster than encoding/json decodes it.
//
// Bare text is read as a value only where JSON evidently surrounds it: a
// bare value inside a container ({"name": John Smith}, [0789, 2]) becomes
// a string up to the next delimiter or line break, but brackets around one
// bare word and nothing JSON-only ("[INFO]", "[x]") are prose, and so is
// top-level text with spaces; brackets that are the whole input ("[0789]")
// are a list. Nothing is invented: a missing value is null, and a key cut
// off by the end of input keeps what was written, with null for its value.
// docs/repair-policy.md lists where these choices differ from
// general-purpose repairers.
//
// Nesting is bounded by Options.MaxDepth and tracked on an explicit stack,
// so hostile input yields an *Error, never a stack overflow.
package repair
