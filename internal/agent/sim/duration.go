package sim

import (
	"fmt"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Duration is a scenario duration written as Go does ("2s", "1m30s"). Its
// decoding errors name the line, column and key, which time.Duration's do
// not.
type Duration time.Duration

// UnmarshalYAML decodes a duration string node.
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	where := "duration"
	if tk := node.GetToken(); tk != nil && tk.Position != nil {
		where = fmt.Sprintf("[%d:%d] %s", tk.Position.Line, tk.Position.Column, node.GetPath())
	}
	str, ok := node.(*ast.StringNode)
	if !ok {
		return fmt.Errorf("%s: want a duration such as \"2s\", got %s", where, node.String())
	}
	v, err := time.ParseDuration(str.Value)
	if err != nil {
		return fmt.Errorf("%s: invalid duration %q", where, str.Value)
	}
	*d = Duration(v)
	return nil
}
