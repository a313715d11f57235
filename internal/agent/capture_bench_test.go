package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadence-dev/cadence/internal/agent"
)

// transcriptFile writes, once per process, a Claude Code stream-json
// transcript of about size bytes with the shape of a real session (tool
// calls carrying file contents, their results, 64 KiB events) and a small
// answer, and returns its path.
var transcriptFile = sync.OnceValues(func() (string, error) {
	const size = 1 << 30
	dir, err := os.MkdirTemp("", "cadence-capture-bench-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "transcript.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, `{"type":"system","subtype":"init","session_id":"5e55a1d0-0000-4000-8000-000000000001"}`)
	content := strings.Repeat(`func f() { return \"line\" }\n`, 64<<10/30)
	written := int64(0)
	for i := 0; written < size; i++ {
		var n int
		if i%2 == 0 {
			n, _ = fmt.Fprintf(w, `{"type":"assistant","message":{"content":[{"type":"text","text":"Writing."},{"type":"tool_use","id":"t%d","name":"Write","input":{"file_path":"/p/f.go","content":"%s"}}]}}`+"\n", i, content)
		} else {
			n, _ = fmt.Fprintf(w, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}}`+"\n", i-1, content)
		}
		written += int64(n)
	}
	fmt.Fprintln(w, `{"type":"result","subtype":"success","is_error":false,"result":"{\"ok\": true}","session_id":"5e55a1d0-0000-4000-8000-000000000001","num_turns":2}`)
	if err := w.Flush(); err != nil {
		return "", err
	}
	return path, f.Close()
})

// BenchmarkCapture measures the capture path on a 1 GiB transcript: `cat`
// of the file through a pipe read into io.Discard (the ceiling of this
// machine), and agent.Run parsing it as Claude Code stream-json, with and
// without the .out copy. Run it with -benchtime 3x; b.SetBytes makes the
// framework report MB/s.
func BenchmarkCapture(b *testing.B) {
	path, err := transcriptFile()
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(filepath.Dir(path))
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cat to a pipe", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			cmd := exec.Command("cat", path)
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, out); err != nil {
				b.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, copyOut := range []bool{false, true} {
		name := "claude-stream"
		if copyOut {
			name += " with the .out copy"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				spec := agent.Spec{Argv: []string{"cat", path}, Dir: b.TempDir(), Protocol: agent.ProtocolClaudeStream}
				if copyOut {
					f, err := os.Create(filepath.Join(spec.Dir, "1.out"))
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					spec.Output, spec.OutputCap = f, 2<<30
				}
				res, err := agent.Run(context.Background(), spec)
				if err != nil {
					b.Fatal(err)
				}
				if string(res.Text) != `{"ok": true}` || res.StdoutBytes != fi.Size() {
					b.Fatalf("Text %q after %d bytes", res.Text, res.StdoutBytes)
				}
			}
		})
	}
}
