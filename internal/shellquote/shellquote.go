// Package shellquote quotes text as one word of a POSIX shell: for
// commands cadence shows a person to copy (the command that answers a
// gate), and for values a workflow's templates put into a shell string.
package shellquote

import "strings"

// Quote returns s in single quotes, a quote inside closing them, escaped,
// then reopening them, so that a shell reads it as exactly one word,
// whatever it holds.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Word returns s as it is when it holds only the characters a path or a
// step id is usually made of, and quoted otherwise: a command shown to be
// copied stays readable and runs as shown.
func Word(s string) string {
	if s == "" {
		return Quote(s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			return Quote(s)
		}
	}
	return s
}
