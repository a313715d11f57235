package jsonvalue

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShq renders a value quoted by shq into a command line and runs it
// under /bin/sh: the shell must see exactly one word, the value as it was,
// whatever quotes, expansions or separators it holds.
func TestShq(t *testing.T) {
	for _, value := range []string{
		"plain",
		"",
		"x'; touch PWNED; echo '",
		`a "b" \c`,
		"$(id) `id` $HOME ${PATH}",
		"line\nbreak; ls",
		"it's'' '''",
		"*?[a]~ & | > <",
	} {
		t.Run(value, func(t *testing.T) {
			line, err := render(t, `printf '%s|' {{ .v | shq }}`, map[string]any{"v": value})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("/bin/sh", "-c", line).Output()
			if err != nil {
				t.Fatalf("sh -c %q: %v", line, err)
			}
			if got := string(out); got != value+"|" {
				t.Errorf("sh -c %q printed %q, want the one word %q", line, got, value+"|")
			}
		})
	}
}

func TestShqScalars(t *testing.T) {
	v, err := Decode([]byte(`{"n": 12.50, "b": true, "l": [1], "o": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]any{"Output": v}
	for _, tc := range []struct{ text, want string }{
		{`{{ shq .Output.n }}`, `'12.50'`},
		{`{{ shq .Output.b }}`, `'true'`},
	} {
		got, err := render(t, tc.text, data)
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	for _, text := range []string{`{{ shq .Output.l }}`, `{{ shq .Output.o }}`} {
		if _, err := render(t, text, data); err == nil || !strings.Contains(err.Error(), "shq: want a string, number or boolean") {
			t.Errorf("%s: error %v, want shq to refuse it", text, err)
		}
	}
}
