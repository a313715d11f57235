package workflow

import "testing"

func TestShellQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"go", "vet", "./..."}, "go vet ./..."},
		{[]string{"sh", "-c", "echo 'hi' && exit 1"}, `sh -c 'echo '\''hi'\'' && exit 1'`},
		{[]string{"npm", "test", "--", "--grep=a b"}, `npm test -- '--grep=a b'`},
		{[]string{"printf", ""}, `printf ''`},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.argv); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
