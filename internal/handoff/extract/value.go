package extract

// Value is one complete top-level JSON object or array found in the stream.
type Value struct {
	// Data holds the value's exact bytes as they appeared in the stream.
	// It is strictly valid JSON and a copy the caller owns.
	Data []byte
	// Offset is the byte offset of the value's first byte in the stream.
	Offset int64
	// Line is the 1-based line of the value's first byte. Lines end at
	// '\n', so CRLF and LF output number lines alike.
	Line int
}

// Stats counts what a Scanner has seen so far.
type Stats struct {
	// Scanned is the number of stream bytes written to the Scanner.
	Scanned int64
	// Values is the number of values emitted.
	Values int64
	// ValueBytes is the total size of the values emitted.
	ValueBytes int64
	// Errors is the number of malformed candidates recovered from.
	Errors int64
	// Overflows is the number of values dropped for exceeding MaxBytes or
	// MaxDepth.
	Overflows int64
}
