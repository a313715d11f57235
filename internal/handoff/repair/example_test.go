package repair_test

import (
	"errors"
	"fmt"

	"github.com/cadence-dev/cadence/internal/handoff/repair"
)

func ExampleRepair() {
	out := []byte("Sure! Here is the result:\n```json\n{'status': 'done', 'ok': True, 'files': ['a.go', 'b.go',],}\n```\nLet me know if it's wrong.")
	r, err := repair.Repair(out, repair.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(r.JSON))
	fmt.Println(r.Repairs)
	// Output:
	// {"status":"done","ok":true,"files":["a.go","b.go"]}
	// [code_fence prose single_quotes python_literals trailing_comma]
}

func ExampleRepair_truncated() {
	r, _ := repair.Repair([]byte(`{"summary": "added retries", "changed": ["a.go", "b.g`), repair.Options{})
	fmt.Println(string(r.JSON), r.Truncated)
	// Output:
	// {"summary":"added retries","changed":["a.go","b.g"]} true
}

func ExampleError() {
	_, err := repair.Repair([]byte("{\n  \"ok\": [1, 2,,]\n}"), repair.Options{})
	var e *repair.Error
	if errors.As(err, &e) {
		fmt.Println(e.Line, e.Column, e.Msg)
		fmt.Printf("%q\n", e.Excerpt)
	}
	// Output:
	// 2 15 expected a value, found ','
	// "{\n  \"ok\": [1, 2,>>>,]\n}"
}
