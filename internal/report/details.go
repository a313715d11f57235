package report

import "encoding/json"

// storedDetails returns the paragraph of a diagnosis stored with an
// attempt (the handoff package's Diagnosis as JSON), or "".
func storedDetails(raw string) string {
	if raw == "" {
		return ""
	}
	var d struct{ Details string }
	if json.Unmarshal([]byte(raw), &d) != nil {
		return ""
	}
	return d.Details
}
