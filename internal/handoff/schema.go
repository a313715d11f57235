package handoff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Schema is a step's handoff schema, compiled once when the workflow is
// loaded and used for every attempt.
//
// Draft 2020-12 and draft-07 are supported; the draft is chosen by the
// schema's $schema keyword and defaults to 2020-12. A $ref to another file is
// resolved relative to the schema file and may only name a local file:
// compiling a schema never touches the network.
type Schema struct {
	// Path is the schema file as given (or the name passed to
	// CompileSchemaBytes); follow-up prompts show it to the agent.
	Path string
	// Raw is the schema document as read.
	Raw []byte

	compiled  *jsonschema.Schema
	fields    []field // top-level properties, in declaration order
	rootArray bool    // the top level is declared "type": "array"
}

// field is one top-level property of a schema, used for the key lists of a
// diagnosis and the minimal template of a last-attempt prompt.
type field struct {
	name     string
	typ      string // "boolean", "array", "string or null", … ("" when unknown)
	required bool
}

// SchemaError reports a schema that cannot be used: unreadable, not JSON, or
// not a valid schema. Path names the schema file (which may be a file the
// step's schema refers to), Location where in it the problem is ("line 3,
// column 14" for a syntax error, a JSON pointer such as "#/properties/x/type"
// for an invalid keyword), and Reason what is wrong.
type SchemaError struct {
	Path     string
	Location string
	Reason   string

	err error // underlying cause, for errors.Is/As
}

// Error implements error.
func (e *SchemaError) Error() string {
	if e.Location == "" {
		return fmt.Sprintf("schema %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("schema %s: %s: %s", e.Path, e.Location, e.Reason)
}

// Unwrap returns the underlying cause, such as fs.ErrNotExist.
func (e *SchemaError) Unwrap() error { return e.err }

// CompileSchema reads and compiles the schema file at path.
func CompileSchema(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("read: %v", unwrapPathError(err)), err: err}
	}
	return CompileSchemaBytes(path, data)
}

// CompileSchemaBytes compiles a schema document held in memory. name is
// used in errors and prompts, and relative $refs resolve against its
// directory.
func CompileSchemaBytes(name string, data []byte) (*Schema, error) {
	doc, err := decodeSchemaJSON(name, data)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, &SchemaError{Path: name, Reason: fmt.Sprintf("resolve path: %v", err), err: err}
	}
	id := fileURL(abs)

	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = loadLocalSchema
	if err := c.AddResource(id, bytes.NewReader(data)); err != nil {
		return nil, compileError(name, abs, err)
	}
	compiled, err := c.Compile(id)
	if err != nil {
		return nil, compileError(name, abs, err)
	}
	raw := make([]byte, len(data))
	copy(raw, data)
	root, _ := resolveRoot(doc)
	obj, _ := root.(map[string]any)
	return &Schema{Path: name, Raw: raw, compiled: compiled, fields: topLevelFields(data, doc), rootArray: obj["type"] == "array"}, nil
}

// Required returns the required top-level property names, in the schema's
// order.
func (s *Schema) Required() []string {
	var names []string
	for _, f := range s.fields {
		if f.required {
			names = append(names, f.name)
		}
	}
	return names
}

// Properties returns the top-level property names the schema declares, in
// the schema's order.
func (s *Schema) Properties() []string {
	names := make([]string, 0, len(s.fields))
	for _, f := range s.fields {
		names = append(names, f.name)
	}
	return names
}

// Validate checks v, a value decoded with json.Decoder.UseNumber, and
// returns every violation, sorted by pointer. It returns nil when v is
// valid or s is nil.
func (s *Schema) Validate(v any) []Violation {
	if s == nil || s.compiled == nil {
		return nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return flatten(ve, v)
	}
	return []Violation{{Pointer: "/", Message: strings.TrimPrefix(err.Error(), "jsonschema: ")}}
}

// decodeSchemaJSON parses a schema document strictly, reporting a syntax
// error with its line and column.
func decodeSchemaJSON(name string, data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, jsonSyntaxError(name, data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		line, col := lineColumn(data, off)
		return nil, &SchemaError{Path: name, Location: fmt.Sprintf("line %d, column %d", line, col),
			Reason: "unexpected data after the schema's JSON value"}
	}
	return doc, nil
}

// jsonSyntaxError turns an encoding/json error into a SchemaError with a
// position.
func jsonSyntaxError(name string, data []byte, err error) *SchemaError {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		// Offset counts the bytes read, the offending one included.
		line, col := lineColumn(data, syn.Offset-1)
		return &SchemaError{Path: name, Location: fmt.Sprintf("line %d, column %d", line, col),
			Reason: "invalid JSON: " + syn.Error(), err: err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := lineColumn(data, int64(len(data)))
		return &SchemaError{Path: name, Location: fmt.Sprintf("line %d, column %d", line, col),
			Reason: "invalid JSON: unexpected end of file", err: err}
	}
	return &SchemaError{Path: name, Reason: "invalid JSON: " + err.Error(), err: err}
}

// loadLocalSchema loads a schema referenced by $ref. Only file URLs are
// allowed, and the file must be valid JSON; a syntax error is reported
// with its position in that file.
func loadLocalSchema(s string) (io.ReadCloser, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parse schema reference %q: %w", s, err)
	}
	if u.Scheme != "file" {
		return nil, &SchemaError{Path: s, Reason: "only local schema files can be referenced"}
	}
	data, err := os.ReadFile(u.Path)
	if err != nil {
		return nil, &SchemaError{Path: u.Path, Reason: fmt.Sprintf("read: %v", unwrapPathError(err)), err: err}
	}
	if _, err := decodeSchemaJSON(u.Path, data); err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// compileError converts an error of the jsonschema compiler into a
// SchemaError naming the file, the location and the reason.
func compileError(name, abs string, err error) *SchemaError {
	var own *SchemaError
	if errors.As(err, &own) {
		if own.Path == abs {
			own.Path = name
		}
		return own
	}
	path := name
	var se *jsonschema.SchemaError
	if errors.As(err, &se) {
		if p := urlPath(se.SchemaURL); p != "" && p != abs {
			path = p
		}
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		leaf := ve
		for len(leaf.Causes) > 0 {
			leaf = leaf.Causes[0]
		}
		loc := leaf.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		return &SchemaError{Path: path, Location: "#" + loc, Reason: leaf.Message, err: err}
	}
	reason := err.Error()
	if se != nil && se.Err != nil {
		reason = se.Err.Error()
	}
	return &SchemaError{Path: path, Reason: strings.TrimPrefix(reason, "jsonschema: "), err: err}
}

// fileURL returns the file URL of an absolute path.
func fileURL(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// urlPath returns the file path of a file URL without its fragment, or "".
func urlPath(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

// unwrapPathError drops the path from an *fs.PathError, which the caller
// already names.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
