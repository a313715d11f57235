//go:build agentcli

package mockmodel

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDebugCLI runs DBG_CLI with DBG_ARGS (JSON) and DBG_ENV (JSON list, $URL replaced) against a mock.
func TestDebugCLI(t *testing.T) {
	var replies []Reply
	json.Unmarshal([]byte(os.Getenv("DBG_REPLIES")), &replies)
	s := Start(t, replies...)
	var args, env []string
	json.Unmarshal([]byte(os.Getenv("DBG_ARGS")), &args)
	json.Unmarshal([]byte(os.Getenv("DBG_ENV")), &env)
	a := agentCLI{name: os.Getenv("DBG_CLI"), setup: func(t *testing.T, sb sandbox) {
		if c := os.Getenv("DBG_SETUP"); c != "" {
			var files map[string]string
			json.Unmarshal([]byte(c), &files)
			for k, v := range files {
				writeFile(t, sb.home+"/"+k, strings.ReplaceAll(v, "$URL", s.URL))
			}
		}
	}, env: func(s *Server, sb sandbox) []string {
		var out []string
		for _, e := range env {
			out = append(out, strings.ReplaceAll(strings.ReplaceAll(e, "$URL", s.URL), "$HOME", sb.home))
		}
		return out
	}}
	sb := newSandbox(t, a, 0)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "$URL", s.URL)
	}
	a.run(t, s, sb, os.Getenv("DBG_PROMPT"), args)
	for _, r := range s.Requests() {
		b := string(r.Body)
		t.Logf("REQ %s %s kind=%s len=%d last=%.200q", r.Method, r.Path, r.Kind, len(b), r.LastUserText())
	}
	if os.Getenv("DBG_SECOND") != "" {
		var args2 []string
		json.Unmarshal([]byte(os.Getenv("DBG_SECOND")), &args2)
		a.run(t, s, sb, "second prompt", args2)
	}
}
