package attempt

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The run loop's shape is held to what made it changeable (SPEC §10): few
// functions with five parameters or more, no receiver that does
// everything, short functions in this package, and every status written
// by a named state change of checkpoint (which the compiler holds; see
// TestNoStatusMadeUp for what it cannot).
const (
	maxWideFuncs      = 6  // functions with five or more parameters, orchestrator and attempt together
	maxMethods        = 40 // methods of one receiver type
	maxFuncLines      = 80 // lines of a function of this package
	wideParams        = 5
	tableLikeExemptFn = "judge" // a table of the agent's ways to end, one case each
)

type funcInfo struct {
	pkg, name, recv string
	params, lines   int
}

func parseFuncs(t *testing.T, dirs ...string) []funcInfo {
	t.Helper()
	var out []funcInfo
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				fi := funcInfo{pkg: f.Name.Name, name: fn.Name.Name,
					lines: fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1}
				for _, p := range fn.Type.Params.List {
					fi.params += max(len(p.Names), 1)
				}
				if fn.Recv != nil && len(fn.Recv.List) == 1 {
					typ := fn.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if id, ok := typ.(*ast.Ident); ok {
						fi.recv = id.Name
					}
				}
				out = append(out, fi)
			}
		}
	}
	return out
}

func TestRunLoopShape(t *testing.T) {
	funcs := parseFuncs(t, ".", filepath.Join("..", "orchestrator"))
	var wide []string
	methods := map[string]int{}
	for _, f := range funcs {
		if f.params >= wideParams {
			wide = append(wide, f.pkg+"."+f.name)
		}
		if f.recv != "" {
			methods[f.pkg+"."+f.recv]++
		}
		if f.pkg == "attempt" && f.lines > maxFuncLines && f.name != tableLikeExemptFn {
			t.Errorf("%s.%s is %d lines, over %d", f.pkg, f.name, f.lines, maxFuncLines)
		}
	}
	if len(wide) > maxWideFuncs {
		t.Errorf("%d functions take %d parameters or more, over %d: %s", len(wide), wideParams, maxWideFuncs, strings.Join(wide, ", "))
	}
	for recv, n := range methods {
		if n > maxMethods {
			t.Errorf("receiver %s has %d methods, over %d", recv, n, maxMethods)
		}
	}
	t.Logf("%d functions with %d or more parameters: %v; methods per receiver: %v", len(wide), wideParams, wide, methods)
}

// statusTypes are checkpoint's status types. The compiler holds that only
// checkpoint's named transitions set a row's status (the field is
// unexported); what it cannot say is that no code converts a string it
// made up into one of these types, to hand to a transition that takes a
// status (RunEnded).
var statusTypes = map[string]bool{"RunStatus": true, "StepStatus": true, "AttemptStatus": true}

// TestNoStatusMadeUp finds no conversion to a status type of checkpoint
// outside checkpoint and tests: a status is one of checkpoint's constants
// or one read from a row.
func TestNoStatusMadeUp(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasPrefix(filepath.ToSlash(path), "../../internal/checkpoint/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		local := checkpointName(f)
		if local == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == local && statusTypes[sel.Sel.Name] {
				t.Errorf("%s converts a value to checkpoint.%s: use one of its constants", fset.Position(call.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkpointName is the name file f imports package checkpoint under, ""
// when it does not import it.
func checkpointName(f *ast.File) string {
	for _, imp := range f.Imports {
		if imp.Path.Value != `"github.com/cadence-dev/cadence/internal/checkpoint"` {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return "checkpoint"
	}
	return ""
}
