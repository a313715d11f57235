package workflow

import (
	"os"

	"github.com/cadence-dev/cadence/internal/handoff"
)

// schemaCache compiles each schema file once, however many steps use it.
type schemaCache struct {
	byPath map[string]schemaResult
}

type schemaResult struct {
	schema *handoff.Schema
	data   []byte
	err    error
}

func newSchemaCache() *schemaCache {
	return &schemaCache{byPath: map[string]schemaResult{}}
}

// get returns the compiled schema at the absolute path abs, with the
// file's content (nil when it could not be read), which the workflow's
// hash covers.
func (c *schemaCache) get(abs string) (*handoff.Schema, []byte, error) {
	if r, ok := c.byPath[abs]; ok {
		return r.schema, r.data, r.err
	}
	var r schemaResult
	data, err := os.ReadFile(abs)
	if err != nil {
		// CompileSchema words the read error as every schema error is.
		r.schema, r.err = handoff.CompileSchema(abs)
	} else {
		r.data = data
		r.schema, r.err = handoff.CompileSchemaBytes(abs, data)
	}
	c.byPath[abs] = r
	return r.schema, r.data, r.err
}
