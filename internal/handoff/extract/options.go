package extract

// Default limits applied when the corresponding Options field is zero.
const (
	DefaultMaxBytes int64 = 8 << 20
	DefaultMaxDepth       = 128
)

// Options bounds the values a Scanner accepts. The zero value selects the
// defaults, which are generous for handoffs yet keep one runaway value from
// exhausting memory.
type Options struct {
	// MaxBytes is the largest value, in bytes, that is buffered and
	// emitted; 0 (or a negative value) means DefaultMaxBytes.
	MaxBytes int64
	// MaxDepth is the deepest nesting of objects and arrays accepted, the
	// outermost container counting as 1; 0 (or a negative value) means
	// DefaultMaxDepth.
	MaxDepth int
}

// withDefaults returns o with zero or negative limits replaced by defaults.
func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}
