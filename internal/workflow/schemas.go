package workflow

import "github.com/cadence-dev/cadence/internal/handoff"

// schemaCache compiles each schema file once, however many steps use it.
type schemaCache struct {
	byPath map[string]schemaResult
}

type schemaResult struct {
	schema *handoff.Schema
	err    error
}

func newSchemaCache() *schemaCache {
	return &schemaCache{byPath: map[string]schemaResult{}}
}

// get returns the compiled schema at the absolute path abs.
func (c *schemaCache) get(abs string) (*handoff.Schema, error) {
	if r, ok := c.byPath[abs]; ok {
		return r.schema, r.err
	}
	s, err := handoff.CompileSchema(abs)
	c.byPath[abs] = schemaResult{schema: s, err: err}
	return s, err
}
