package extract_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/cadence-dev/cadence/internal/handoff/extract"
)

// A Scanner sits behind an io.Writer: copy the agent's output into it and
// receive the embedded values as they complete.
func ExampleScanner() {
	output := "[INFO] running tests\nAll green. Handoff:\n```json\n{\"success\": true, \"files\": [\"a.go\"]}\n```\n"
	s := extract.NewScanner(extract.Options{},
		func(v extract.Value) { fmt.Printf("line %d: %s\n", v.Line, v.Data) },
		func(e *extract.Error) { fmt.Println("skipped:", e) })
	if _, err := io.Copy(s, strings.NewReader(output)); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("tail: %q\n", s.Close())
	// Output:
	// skipped: json malformed at line 1 (offset 1): invalid character 'I' looking for beginning of value
	// line 4: {"success": true, "files": ["a.go"]}
	// tail: ""
}

// Scan handles a whole output at once; a value cut off at the end comes
// back as the tail, for the repair stage to close.
func ExampleScan() {
	values, errs, tail := extract.Scan([]byte(`{"step":1} then {"step":2, "notes": "trunc`), extract.Options{})
	for _, v := range values {
		fmt.Printf("offset %d: %s\n", v.Offset, v.Data)
	}
	fmt.Println(len(errs), "errors")
	fmt.Printf("tail: %s\n", tail)
	// Output:
	// offset 0: {"step":1}
	// 0 errors
	// tail: {"step":2, "notes": "trunc
}
