// Package coerce turns a handoff that parses but misses its schema into the
// one value the schema accepts, when there is exactly one and getting there
// loses nothing.
//
// A schema miss otherwise always costs a retry: a whole agent turn, its
// tokens and minutes. Many misses have a single lossless reading that fits
// the schema (BAML calls this schema-aligned parsing):
//
//   - a number or boolean written as a string where the schema wants a
//     number, integer or boolean ("5", "true");
//   - a single value where the schema wants an array of it;
//   - an enum value that differs only in case or surrounding spaces;
//   - the whole expected value wrapped in an object of one key
//     ({"result": {…}});
//   - null for an optional property whose schema does not allow null (the
//     property is dropped).
//
// Coercion is guided by the compiled schema and judged by it: a reading is
// taken only when the coerced value then validates against the whole
// schema, and only when it is the only such reading at its place (a string
// "5" where the schema accepts an integer or an array of strings is left
// alone). Nothing lossy is ever tried: "5.5" is not an integer, a
// two-element array is not a scalar, "yes" is not a boolean. Each coercion
// is reported with its name and the JSON pointer of the value it changed,
// in the document as the agent wrote it, so that a record can say what was
// done and where.
//
// Coerce works on values decoded by encoding/json with UseNumber; Apply
// works on JSON text and keeps the order of object keys.
package coerce
