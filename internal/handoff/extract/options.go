package extract

// Default limits applied when the corresponding Options field is zero.
// DefaultMaxDepth is encoding/json's own limit, which decodes every value
// found: anything it accepts is accepted here.
const (
	DefaultMaxBytes int64 = 8 << 20
	DefaultMaxDepth       = 10000
)

// strictDepth is how deep the strict machine follows a candidate. A
// malformed candidate is rescanned from the byte after its bracket, so a
// scan costs up to strictDepth passes over hostile input (runs of "[[[…x");
// the bound keeps that cost fixed while MaxDepth is large. A valid value
// nested deeper is followed by its brackets and strings alone, kept, and
// validated by encoding/json once it ends, in linear time; a malformed one
// is dropped without a rescan.
const strictDepth = 128

// Options bounds the values a Scanner accepts. The zero value selects the
// defaults, which are generous for handoffs yet keep one runaway value from
// exhausting memory.
type Options struct {
	// MaxBytes is the largest value, in bytes, that is buffered and
	// emitted; 0 (or a negative value) means DefaultMaxBytes.
	MaxBytes int64
	// MaxDepth is the deepest nesting of objects and arrays accepted, the
	// outermost container counting as 1; 0 (or a negative value) means
	// DefaultMaxDepth, and a larger value is lowered to it.
	MaxDepth int
}

// withDefaults returns o with zero or negative limits replaced by defaults.
func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 || o.MaxDepth > DefaultMaxDepth {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}
