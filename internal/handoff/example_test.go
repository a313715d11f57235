package handoff_test

import (
	"fmt"
	"log"

	"github.com/cadence-dev/cadence/internal/handoff"
)

// An agent wraps its answer in prose and writes Python literals; repair
// fixes the value and records what it did.
func ExampleCheck() {
	schema, err := handoff.CompileSchema("testdata/schemas/plan.json")
	if err != nil {
		log.Fatal(err)
	}
	output := []byte("Here is the plan:\n{'tasks': [{'id': 't1', 'title': 'Parse'}], 'success': True}\n")
	res := handoff.Check(output, schema, handoff.Options{Repair: true})
	fmt.Println(res.OK, string(res.JSON))
	fmt.Println(res.Repairs)
	// Output:
	// true {"tasks":[{"id":"t1","title":"Parse"}],"success":true}
	// [prose single_quotes python_literals]
}

// A value that parses but fails the schema is diagnosed with every
// violation; Summary is the line kept in logs and envelopes.
func ExampleCheck_schemaFailure() {
	schema, err := handoff.CompileSchema("testdata/schemas/plan.json")
	if err != nil {
		log.Fatal(err)
	}
	res := handoff.Check([]byte(`{"tasks": [], "success": "yes"}`), schema, handoff.Options{})
	fmt.Println(res.Diagnosis.Summary())
	for _, v := range res.Diagnosis.Violations {
		fmt.Println(v)
	}
	// Output:
	// schema: /success: expected boolean, got string (and 1 more violation)
	// /success: expected boolean, got string
	// /tasks: expected at least 1 item, got 0 items
}
