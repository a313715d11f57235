package orchestrator

import (
	"testing"

	"github.com/cadence-dev/cadence/internal/jsonvalue"
)

// TestRunRowsEnvelopeData: data read ahead is used only for the envelope it
// was decoded from, and only once; anything else is decoded afresh.
func TestRunRowsEnvelopeData(t *testing.T) {
	ahead := []byte(`{"data":{"from":"ahead"}}`)
	marker := jsonvalue.Object{"from": "the rows read ahead"}
	tests := []struct {
		name string
		rows *runRows
		id   string
		env  string
		want string
	}{
		{"the same envelope", &runRows{data: map[string]decodedData{"a": {raw: ahead, v: marker}}}, "a", string(ahead), `{"from":"the rows read ahead"}`},
		{"another envelope for the row", &runRows{data: map[string]decodedData{"a": {raw: ahead, v: marker}}}, "a", `{"data":{"from":"now"}}`, `{"from":"now"}`},
		{"another row", &runRows{data: map[string]decodedData{"a": {raw: ahead, v: marker}}}, "b", string(ahead), `{"from":"ahead"}`},
		{"nothing read ahead", nil, "a", string(ahead), `{"from":"ahead"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := tt.rows.envelopeData(tt.id, []byte(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := jsonvalue.Marshal(v); string(b) != tt.want {
				t.Fatalf("data %s, want %s", b, tt.want)
			}
			// Handed out once: a second read decodes the envelope.
			v, err = tt.rows.envelopeData(tt.id, []byte(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := jsonvalue.Marshal(v); string(b) == `{"from":"the rows read ahead"}` {
				t.Fatal("the data read ahead was handed out twice")
			}
		})
	}
}

// TestReadingRowsTake: the rows read ahead are given for their run only,
// once, after the reading ended.
func TestReadingRowsTake(t *testing.T) {
	var none *readingRows
	if none.take("r1") != nil {
		t.Fatal("rows from no reading")
	}
	r := &readingRows{done: make(chan struct{})}
	go func() {
		r.rows = &runRows{runID: "r1"}
		close(r.done)
	}()
	if r.take("r2") != nil {
		t.Fatal("the rows of r1 were given for r2")
	}
	r = &readingRows{done: make(chan struct{}), rows: &runRows{runID: "r1"}}
	close(r.done)
	if r.take("r1") == nil {
		t.Fatal("the rows of r1 were not given for r1")
	}
	if r.take("r1") != nil {
		t.Fatal("the rows were given twice")
	}
}
