package agent

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReplayReadsAsRunDoes: replaying a recorded transcript yields the
// answer, session and error that reading it live does.
func TestReplayReadsAsRunDoes(t *testing.T) {
	protocols := map[string]Protocol{"claude": ProtocolClaudeStream, "codex": ProtocolCodexJSONL, "gemini": ProtocolGeminiStream}
	n := 0
	for cli, proto := range protocols {
		files, err := filepath.Glob(filepath.Join(transcriptDir, cli, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
			stdout, _ := transcript(t, cli, name)
			live := feedSpec(t, Spec{Protocol: proto}, stdout, nil)
			got, err := Replay(bytes.NewReader(stdout), proto, 0, 0)
			if err != nil {
				t.Fatalf("%s/%s: %v", cli, name, err)
			}
			if !bytes.Equal(got.Text, live.Text) || !reflect.DeepEqual(got.StructuredOutput, live.StructuredOutput) ||
				got.SessionID != live.SessionID || got.IsError != live.IsError || got.Transient != live.Transient {
				t.Errorf("%s/%s: replay %+v, live %+v", cli, name, got, live)
			}
			if name == "success" && len(got.Text) == 0 {
				t.Errorf("%s/success: no answer replayed", cli)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no transcripts found")
	}
}

func TestReplayText(t *testing.T) {
	got, err := Replay(strings.NewReader("log line\n{\"a\": 1}\n"), ProtocolText, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Text) != "log line\n{\"a\": 1}\n" {
		t.Errorf("Text = %q", got.Text)
	}
	if _, err := Replay(strings.NewReader(""), "morse", 0, 0); err == nil {
		t.Error("an unknown protocol was accepted")
	}
}
