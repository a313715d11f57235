package agent

import (
	"encoding/json"
	"unicode/utf8"
)

// stringValue decodes a raw JSON string value; anything else, or a malformed
// string, is "". A string with no escapes, no control characters and valid
// UTF-8 is taken as it is, without encoding/json.
func stringValue(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	inner := raw[1 : len(raw)-1]
	if plainString(inner) {
		return string(inner)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// stringField decodes a field that must be a string or null, as
// encoding/json would into a string: ok is false for any other value.
func stringField(raw []byte) (string, bool) {
	if string(raw) == "null" {
		return "", true
	}
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; raw[len(raw)-1] == '"' && plainString(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plainString reports whether the bytes between a string's quotes need no
// decoding: no backslash, no quote, no control character, valid UTF-8.
func plainString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' || c == '"' {
			return false
		}
	}
	return utf8.Valid(b)
}
