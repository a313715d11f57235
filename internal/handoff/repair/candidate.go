package repair

// fenceKind says whether a value was found inside a markdown code fence,
// and of what language.
type fenceKind uint8

const (
	fenceNone  fenceKind = iota
	fenceOther           // ```python, ```text, ...
	fenceBare            // ``` without a language
	fenceJSON            // ```json, ```jsonc, ```json5
)

// candidate is one top-level value found in the input.
type candidate struct {
	json      []byte
	reps      repairSet
	truncated bool
	kind      byte // '{', '[' or '"' for strings; 0 for other scalars
	fence     fenceKind
	start     int // offset of the value's first byte in the input
	end       int // offset just past the value
}

// kindRank orders values of the same completeness and fence: a handoff is
// an object far more often than an array, and prose holds stray arrays such
// as footnote markers [1].
func (c *candidate) kindRank() int {
	switch c.kind {
	case '{':
		return 2
	case '[':
		return 1
	}
	return 0
}

// supersedes reports whether c, found later in the input, is a better
// handoff than the earlier b: complete beats truncated, then a value from a
// json fence beats one from a bare fence beats one in prose, then objects
// beat arrays beat scalars, and otherwise the later value wins.
func (c *candidate) supersedes(b *candidate) bool {
	if c.truncated != b.truncated {
		return !c.truncated
	}
	if c.fence != b.fence {
		return c.fence > b.fence
	}
	return c.kindRank() >= b.kindRank()
}
