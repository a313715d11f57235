package repair

import (
	"encoding/json"
)

// decodeStringJSON replaces a top-level string value whose content is
// itself a JSON object or array (`"{\"a\":1}"`) by that value, repaired the
// same way. Only one level is undone: content that is again a string stays
// a string. c is left alone when the content is not a whole object or array.
func decodeStringJSON(c *candidate, maxDepth int) {
	var content string
	if json.Unmarshal(c.json, &content) != nil {
		return
	}
	in := []byte(content)
	if !json.Valid(in) {
		// Only strictly valid content is a value the agent encoded (as
		// json.dumps would): "{a:2,}" is text that looks like JSON.
		return
	}
	i := skipWS(in, 0)
	if i >= len(in) || in[i] != '{' && in[i] != '[' {
		return
	}
	p := parser{in: in, maxDepth: maxDepth}
	p.reset(i, make([]byte, 0, len(in)))
	if p.parse() != nil || p.truncated || skipWS(in, p.pos) != len(in) {
		return
	}
	var reps repairSet
	reps.merge(c.reps)
	reps.add(idStringEncodedJSON)
	reps.merge(p.reps)
	c.json, c.reps, c.kind = p.out, reps, in[i]
}
