package repair

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFailFormats checks every call of parser.fail in this package: its
// format is a constant whose verbs take exactly the arguments given, and no
// more than parseError can hold. The message is formatted only when it is
// reported, so go vet's printf check cannot follow it; a missing argument
// showed as "%!s(MISSING)" in a diagnosis.
func TestFailFormats(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := goparser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "fail" || len(call.Args) < 2 {
				return true
			}
			calls++
			pos := fset.Position(call.Pos())
			lit, ok := call.Args[1].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: the format of fail is not a string constant", pos)
				return true
			}
			format, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Errorf("%s: %v", pos, err)
				return true
			}
			args := len(call.Args) - 2
			if verbs := countVerbs(format); verbs != args {
				t.Errorf("%s: format %q has %d verbs for %d arguments", pos, format, verbs, args)
			}
			if args > maxFailArgs {
				t.Errorf("%s: %d arguments, but a parseError holds %d", pos, args, maxFailArgs)
			}
			return true
		})
	}
	if calls == 0 {
		t.Fatal("found no call of fail: the test no longer looks at the right code")
	}
}

// countVerbs counts the formatting verbs of a format string ("%%" is not
// one). Flags, width and precision are skipped; '*' would take an argument
// and is not used here.
func countVerbs(format string) int {
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] != '%' {
			n++
		}
	}
	return n
}

func TestParseErrorMessage(t *testing.T) {
	var p parser
	e := p.fail(3, "found %q where %q closes the open %s", byte('}'), byte(']'), "array")
	if got, want := e.msg(), `found '}' where ']' closes the open array`; got != want {
		t.Fatalf("msg() = %q, want %q", got, want)
	}
}
