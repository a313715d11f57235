package extract

// skipper discards a value that nests deeper than the stack the strict
// machine keeps. It follows only strings, escapes and a nesting count: that
// is enough to find where the value ends without storing anything per
// level, so a pathologically deep value costs constant memory.
type skipper struct {
	depth   int
	inStr   bool
	escaped bool
	// limit, when positive, stops run at the bracket that nests deeper
	// than it, with over set.
	limit int
	over  bool
}

// structural marks the bytes that matter to a skipper outside strings.
var structural = func() (t [256]bool) {
	for _, c := range []byte(`"{}[]`) {
		t[c] = true
	}
	return t
}()

// run consumes p up to and including the byte that closes the value. It
// reports how many bytes it consumed and whether the value ended.
func (k *skipper) run(p []byte) (int, bool) {
	i := 0
	for i < len(p) {
		switch {
		case k.escaped:
			k.escaped = false
			i++
		case k.inStr:
			for i < len(p) && p[i] != '"' && p[i] != '\\' {
				i++
			}
			if i == len(p) {
				return i, false
			}
			if p[i] == '"' {
				k.inStr = false
			} else {
				k.escaped = true
			}
			i++
		default:
			for i < len(p) && !structural[p[i]] {
				i++
			}
			if i == len(p) {
				return i, false
			}
			switch p[i] {
			case '"':
				k.inStr = true
			case '{', '[':
				k.depth++
				if k.limit > 0 && k.depth > k.limit {
					k.over = true
					return i + 1, false
				}
			default:
				k.depth--
				if k.depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
	}
	return i, false
}
