// Package handoff turns an agent's raw output into a validated JSON handoff,
// or into a precise diagnosis of why it cannot be one.
//
// Check runs the pipeline of the product specification (§5): the extract
// subpackage finds the JSON values embedded in prose and markdown fences,
// each is parsed strictly and validated against the step's Schema, and only
// when none is usable does the repair subpackage rewrite the output
// deterministically (Python literals, single quotes, trailing commas, a
// truncated end, …). A value that parses but fails its schema may then be
// coerced to it (Options.Coerce, the coerce subpackage): "5" to 5, a lone
// value to an array of it, an enum value in the wrong case, when exactly
// one lossless reading validates. A failure is diagnosed into exactly one
// Class with the detail a person or an agent needs to fix it: every schema
// violation with its JSON pointer, the line and column of a parse error,
// where a cut-off value ends.
//
// A handoff is one the agent wrote (SPEC §18 "Provenance"). Every value
// found is placed by the provenance subpackage: the whole output, a json or
// unlabelled fence, a handoff file, prose, or code (a code span, another
// language's fence, a value that continues a line of code). Code is never
// the handoff, nor an empty value in prose, and a value in prose that
// needed a structural repair (IsStructural) is taken only on the schema's
// evidence; otherwise the diagnosis quotes what was read, for a follow-up
// in the same session. Result.Provenance records where the accepted value
// came from; docs/repair-policy.md gives the policy and its reasons.
//
// From a Diagnosis, BuildFollowup writes the prompt that continues the
// agent's session, NewFailedRecord the debug record kept for each failed
// attempt, and Summary the one line shown in logs and in the Envelope an
// accepted handoff is stored in.
//
// The package is pure: it starts no process, keeps no state between calls,
// and its output depends only on its input.
package handoff
