//go:build !unix

package handoff

// noFollow is not available on this platform; CheckFile's Lstat check
// still refuses links.
const noFollow = 0
