package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/attempt"
	"github.com/cadence-dev/cadence/internal/handoff"
	"github.com/cadence-dev/cadence/internal/history"
	"github.com/cadence-dev/cadence/internal/workflow"
)

type validateCmd struct {
	Schema          string `help:"JSON Schema file (draft 2020-12 or draft-07); required unless --failed." type:"path"`
	Input           string `arg:"" optional:"" help:"File with the agent's output (default: standard input); with --failed, the project directory (default: the current one)."`
	JSON            bool   `help:"On failure print the diagnosis as a failed-handoff record (JSON) instead of text; with --failed, print a JSON array."`
	NoRepair        bool   `help:"Do not repair: the JSON must parse as it is."`
	NoCoerce        bool   `help:"Do not coerce a value that misses the schema to its one lossless reading (\"5\" to 5, one item to a list of it)."`
	AcceptTruncated bool   `help:"Accept a value obtained only by closing truncated output."`
	MaxBytes        int64  `default:"8388608" help:"Refuse input larger than this many bytes."`
	MaxDepth        int    `default:"10000" help:"Refuse values nested deeper than this (10000 is encoding/json's own limit)."`

	Failed   bool   `help:"Judge again the stored output of every attempt whose handoff failed, with the current workflow's pipeline (repair, coercion, schema; checks are not run), and print the old class and the new verdict. Reads the state, changes nothing."`
	RunID    string `name:"run" help:"With --failed: the run (default: the latest run)."`
	Step     string `help:"With --failed: only this step's attempts."`
	Workflow string `help:"With --failed: workflow file (default DIR/.cadence/workflow.yaml)." type:"path"`
	stateFlag
}

func (c *validateCmd) Run(e *env) error {
	if c.Failed {
		return c.failed(e)
	}
	if c.RunID != "" || c.Step != "" || c.Workflow != "" {
		return withCode(exitUsage, errors.New("--run, --step and --workflow go with --failed"))
	}
	if c.Schema == "" {
		return withCode(exitUsage, errors.New("--schema is required (or --failed, to judge a project's failed attempts again)"))
	}
	if _, err := os.Stat(c.Schema); errors.Is(err, os.ErrNotExist) {
		return withCode(exitUsage, fmt.Errorf("schema file %s does not exist", c.Schema))
	}
	schema, err := handoff.CompileSchema(c.Schema)
	if err != nil {
		var se *handoff.SchemaError
		if errors.As(err, &se) {
			return withCode(exitUsage, fmt.Errorf("schema %s does not compile: at %s: %s", se.Path, se.Location, se.Reason))
		}
		return withCode(exitUsage, err)
	}
	data, err := readInput(e, c.Input, c.MaxBytes)
	if err != nil {
		return err
	}
	res := handoff.Check(data, schema, handoff.Options{
		Repair: !c.NoRepair, AcceptTruncated: c.AcceptTruncated, Coerce: !c.NoCoerce, MaxBytes: c.MaxBytes, MaxDepth: c.MaxDepth,
	})
	if res.OK {
		fmt.Fprintf(e.stdout, "%s\n", res.JSON)
		fmt.Fprintf(e.stderr, "handoff from %s; repairs: %s\n", res.Provenance, orNone(res.Repairs))
		if len(res.Coercions) > 0 {
			cs := make([]string, len(res.Coercions))
			for i, x := range res.Coercions {
				cs[i] = x.String()
			}
			fmt.Fprintf(e.stderr, "coerced to the schema: %s\n", strings.Join(cs, ", "))
		}
		return nil
	}
	d := res.Diagnosis
	if c.JSON {
		rec := handoff.FailedRecord{
			Class: d.Class, Details: d.Details, Violations: d.Violations, Repairs: res.Repairs,
			Provenance: d.Provenance, OutputSample: d.OutputSample, OutputFile: c.Input,
		}
		if rec.Violations == nil {
			rec.Violations = []handoff.Violation{}
		}
		if rec.Repairs == nil {
			rec.Repairs = []string{}
		}
		if err := writeJSON(e.stdout, rec); err != nil {
			return err
		}
		return withCode(exitFailed, nil)
	}
	fmt.Fprintf(e.stdout, "invalid handoff: %s\n%s\n", d.Class, d.Details)
	for _, v := range d.Violations {
		fmt.Fprintf(e.stdout, "  %s: %s (expected %s, got %s)\n", pointer(v.Pointer), v.Keyword, v.Expected, v.Actual)
	}
	if d.Provenance != "" {
		fmt.Fprintf(e.stdout, "value found in: %s\n", d.Provenance)
	}
	if len(res.Repairs) > 0 {
		fmt.Fprintf(e.stdout, "repairs applied: %v\n", res.Repairs)
	}
	return withCode(exitFailed, nil)
}

// orNone joins names with ", ", or says "none".
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func pointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// Verdicts of an attempt judged again.
const (
	verdictPass    = "pass"
	verdictFail    = "fail"
	verdictSkipped = "skipped"
)

// rejudged is one failed attempt judged again by `validate --failed`.
type rejudged struct {
	RunID    string `json:"run_id"`
	Step     string `json:"step"`
	Item     string `json:"item,omitempty"` // a map step's item key
	Attempt  int    `json:"attempt"`
	OldClass string `json:"old_class"`
	OldError string `json:"old_error"`
	// Verdict is pass, fail or skipped (the output cannot be judged
	// again: Summary says why).
	Verdict string `json:"verdict"`
	// Class and Summary are the new diagnosis when the verdict is fail.
	Class      string   `json:"class,omitempty"`
	Summary    string   `json:"summary,omitempty"`
	Repairs    []string `json:"repairs"`
	OutputFile string   `json:"output_file"`
}

// failed judges again, without changing anything, the stored output of
// every attempt of a run whose handoff failed (missing, empty,
// invalid_json, truncated, schema), with the pipeline of the current
// workflow: after a schema or prompt fix, it tells which past failures
// would now pass. State is read the way inspect reads it, without the
// project lock.
func (c *validateCmd) failed(e *env) error {
	dir := c.Input
	if dir == "" {
		dir = "."
	}
	dir = findProject(dir)
	wf, err := workflow.Load(dir, c.Workflow)
	if err != nil {
		return withCode(exitUsage, err)
	}
	rep, err := history.Inspect(e.ctx, dir, c.State, c.RunID, true)
	if errors.Is(err, history.ErrNoRuns) {
		return noRuns(dir)
	}
	if err != nil {
		return withCode(exitUsage, stateHint(err))
	}
	found := c.Step == ""
	out := []rejudged{}
	for _, s := range rep.Steps {
		if c.Step != "" && s.ID != c.Step {
			continue
		}
		found = true
		for _, a := range s.Attempts {
			if a.Status != "failed" || !handoff.Class(a.Class).IsHandoffFailure() {
				continue
			}
			out = append(out, c.rejudge(dir, wf, rep.Run.ID, s, "", a))
		}
		// A map step's failures are its items'.
		for _, it := range s.Items {
			for _, a := range it.Attempts {
				if a.Status != "failed" || !handoff.Class(a.Class).IsHandoffFailure() {
					continue
				}
				out = append(out, c.rejudge(dir, wf, rep.Run.ID, s, it.Key, a))
			}
		}
	}
	if !found {
		return withCode(exitUsage, fmt.Errorf("run %s has no step %q", rep.Run.ID, c.Step))
	}
	if c.JSON {
		return writeJSON(e.stdout, out)
	}
	printRejudged(e.stdout, rep.Run.ID, out)
	return nil
}

// rejudge runs the handoff pipeline of the step's current settings over
// the stored output of attempt a.
func (c *validateCmd) rejudge(dir string, wf *workflow.Workflow, runID string, s history.StepReport, item string, a history.AttemptReport) rejudged {
	r := rejudged{RunID: runID, Step: s.ID, Item: item, Attempt: a.N, OldClass: a.Class, OldError: a.Error, Repairs: []string{}, OutputFile: a.OutputFile}
	ws := wf.Step(s.ID)
	if ws == nil {
		return skipped(r, "the step is no longer in the workflow")
	}
	opts := handoff.Options{Repair: ws.Handoff.Repair && !c.NoRepair, AcceptTruncated: ws.Handoff.AcceptTruncated,
		Coerce: ws.Handoff.Coerce && !c.NoCoerce, MaxBytes: ws.Handoff.MaxBytes, MaxDepth: ws.Handoff.MaxDepth}
	var res handoff.Result
	if ws.Handoff.From == "file" {
		var why string
		if res, why = fileHandoff(a, ws, opts); why != "" {
			return skipped(r, why)
		}
	} else {
		ag := wf.Agents[s.Agent]
		if ag == nil {
			ag = wf.Agents[ws.Agent]
		}
		var why string
		if res, why = storedOutput(dir, a.OutputFile, ag, ws, opts); why != "" {
			return skipped(r, why)
		}
	}
	r.Repairs = append(r.Repairs, res.Repairs...)
	if res.OK {
		r.Verdict = verdictPass
		return r
	}
	r.Verdict, r.Class, r.Summary = verdictFail, string(res.Diagnosis.Class), res.Diagnosis.Summary()
	return r
}

func skipped(r rejudged, why string) rejudged {
	r.Verdict, r.Summary = verdictSkipped, why
	return r
}

// fileHandoff judges again a file handoff. The file itself is cleared
// before each attempt and not kept; its diagnosis keeps its size and first
// 500 bytes, which are the whole file when it was that small.
func fileHandoff(a history.AttemptReport, ws *workflow.Step, opts handoff.Options) (handoff.Result, string) {
	var d handoff.Diagnosis
	if err := json.Unmarshal([]byte(a.Details), &d); err != nil {
		return handoff.Result{}, "the attempt's diagnosis cannot be read"
	}
	if handoff.Class(a.Class) == handoff.ClassMissing {
		return handoff.Result{Diagnosis: &handoff.Diagnosis{Class: handoff.ClassMissing, Details: "The attempt wrote no handoff file."}}, ""
	}
	if int64(len(d.OutputSample)) != d.OutputSize {
		return handoff.Result{}, fmt.Sprintf("the handoff file was not kept, only its first %d of %d bytes", len(d.OutputSample), d.OutputSize)
	}
	return handoff.Check([]byte(d.OutputSample), ws.Handoff.Schema, opts), ""
}

// storedOutput judges again what the attempt judged: the text kept apart
// from its .out file (a text agent's stdout, a protocol agent's final
// answer), else, for attempts recorded before that was kept, the .out
// file itself: a stream agent's transcript is read by the parser that
// read it live, for its final answer; a text agent's output is judged
// whole, as it streamed, with its stderr mixed in.
func storedOutput(dir, rel string, ag *workflow.Agent, ws *workflow.Step, opts handoff.Options) (handoff.Result, string) {
	proto, ok := protocolOf(ag)
	if !ok {
		return handoff.Result{}, "the agent's output file does not hold its answer (openai agents keep the HTTP exchange)"
	}
	if rel == "" {
		return handoff.Result{}, "the attempt has no output file"
	}
	stdoutFile, answerFile := attempt.JudgedFiles(rel)
	if proto == agent.ProtocolText {
		// Judged as it streamed, as when it ran.
		if f, err := os.Open(filepath.Join(dir, stdoutFile)); err == nil {
			defer f.Close()
			st := handoff.NewStream(ws.Handoff.Schema, opts, 0)
			if _, err := io.Copy(st, f); err != nil {
				return handoff.Result{}, fmt.Sprintf("%s cannot be read: %v", stdoutFile, err)
			}
			return st.Result(), ""
		}
	} else if answer, err := os.ReadFile(filepath.Join(dir, answerFile)); err == nil {
		return handoff.Check(answer, ws.Handoff.Schema, opts), ""
	}
	f, err := os.Open(filepath.Join(dir, rel))
	if err != nil {
		return handoff.Result{}, fmt.Sprintf("its output file cannot be read: %v", err)
	}
	defer f.Close()
	if proto == agent.ProtocolText {
		st := handoff.NewStream(ws.Handoff.Schema, opts, 0)
		if _, err := io.Copy(st, f); err != nil {
			return handoff.Result{}, fmt.Sprintf("its output file cannot be read: %v", err)
		}
		return st.Result(), ""
	}
	res, err := agent.Replay(f, proto, ws.Handoff.MaxBytes, ws.Handoff.MaxEventBytes)
	if err != nil {
		return handoff.Result{}, fmt.Sprintf("its output file cannot be read: %v", err)
	}
	if res.TextTooLarge || res.SkippedResult {
		return handoff.Result{}, "the agent's final answer was over max_bytes or max_event_bytes"
	}
	text := res.Text
	if len(res.StructuredOutput) > 0 {
		text = res.StructuredOutput
	}
	if res.IsError {
		// As when it ran: a failed turn's text is an error message.
		text = nil
	}
	return handoff.Check(text, ws.Handoff.Schema, opts), ""
}

// protocolOf is the protocol an agent's stdout is read in, as the
// orchestrator sets it: the preset's, or for exec agents their output
// setting. ok is false for openai agents, which are not processes.
func protocolOf(ag *workflow.Agent) (agent.Protocol, bool) {
	if ag == nil {
		return agent.ProtocolText, true
	}
	switch ag.Preset {
	case agent.PresetClaude, agent.PresetSim:
		return agent.ProtocolClaudeStream, true
	case agent.PresetCodex:
		return agent.ProtocolCodexJSONL, true
	case agent.PresetGemini:
		return agent.ProtocolGeminiStream, true
	case agent.PresetQwen:
		return agent.ProtocolQwenStream, true
	case agent.PresetOpencode:
		return agent.ProtocolOpencodeJSON, true
	case agent.PresetPi:
		return agent.ProtocolPiJSON, true
	case agent.PresetCopilot:
		return agent.ProtocolCopilotJSON, true
	case agent.PresetOpenAI:
		return "", false
	}
	if ag.Output != "" {
		return agent.Protocol(ag.Output), true
	}
	return agent.ProtocolText, true
}

// printRejudged prints one line per attempt judged again and a count.
func printRejudged(w io.Writer, runID string, rs []rejudged) {
	if len(rs) == 0 {
		fmt.Fprintf(w, "run %s has no failed handoff to judge again\n", runID)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tATTEMPT\tWAS\tNOW")
	pass := 0
	for _, r := range rs {
		now := r.Verdict
		switch r.Verdict {
		case verdictPass:
			pass++
			if len(r.Repairs) > 0 {
				now += " (" + strings.Join(r.Repairs, ", ") + ")"
			}
		case verdictFail:
			now = r.Summary
		case verdictSkipped:
			now += ": " + r.Summary
		}
		step := r.Step
		if r.Item != "" {
			step += "[" + r.Item + "]"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", step, r.Attempt, r.OldClass, clip(now, 120))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d failed handoffs of run %s would pass now\n", pass, len(rs), runID)
}
