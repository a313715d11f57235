//go:build !unix

package agent

// systemFileSecure: Gemini CLI checks a system settings file's ACLs on
// Windows, which the preset does not; it offers no file there.
func systemFileSecure(string) bool { return false }
