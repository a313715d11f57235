package handoff

import "testing"

func TestClassIsHandoffFailure(t *testing.T) {
	want := map[Class]bool{
		ClassMissing: true, ClassEmpty: true, ClassInvalidJSON: true, ClassTruncated: true, ClassSchema: true,
		ClassExitNonzero: false, ClassTransient: false, ClassTimeout: false, ClassStuck: false,
		ClassTooLarge: false, ClassInterrupted: false, ClassHelp: false, ClassBudget: false,
		ClassCheck: false, ClassConfig: false, ClassExpression: false, ClassAuth: false,
	}
	if len(Classes()) != len(want) {
		t.Fatalf("Classes() has %d classes, want %d", len(Classes()), len(want))
	}
	for _, c := range Classes() {
		w, ok := want[c]
		if !ok {
			t.Errorf("unexpected class %q", c)
			continue
		}
		if got := c.IsHandoffFailure(); got != w {
			t.Errorf("%s.IsHandoffFailure() = %v, want %v", c, got, w)
		}
		if got, want := c.IsAnswerFailure(), w || c == ClassCheck; got != want {
			t.Errorf("%s.IsAnswerFailure() = %v, want %v", c, got, want)
		}
		if !c.Valid() {
			t.Errorf("%s.Valid() = false", c)
		}
	}
	if ClassAuth != "auth" || Classes()[len(Classes())-1] != ClassAuth {
		t.Errorf("auth is %q, last of Classes() %q: the class name is stored, and new classes come last", ClassAuth, Classes()[len(Classes())-1])
	}
	if Class("weird").Valid() || Class("weird").IsHandoffFailure() {
		t.Error("an unknown class is valid or a handoff failure")
	}
}
