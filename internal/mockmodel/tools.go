package mockmodel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ToolOp is what a scripted tool call asks the agent to do.
type ToolOp string

// The operations a script can ask for. Every coding CLI has a way to do
// each, though under its own tool names and argument shapes (see
// resolveTool).
const (
	OpRead  ToolOp = "read"  // read a file
	OpShell ToolOp = "shell" // run a shell command
	OpWrite ToolOp = "write" // write a file
	OpEdit  ToolOp = "edit"  // replace a string in a file
	// OpStructured answers through the tool a CLI declares for a native
	// schema (Qwen Code's structured_output under --json-schema), whose
	// arguments are the answer itself.
	OpStructured ToolOp = "structured"
)

// ToolCall is one tool use the scripted model asks the agent for. The
// server answers a turn whose Reply carries one with a tool call in the
// API's wire format, naming the tool the request declares for the
// operation, and the agent runs it and sends the result in its next turn.
type ToolCall struct {
	Op ToolOp
	// Path is the file to read or write. Use an absolute path: Claude
	// Code's Read and Write refuse relative ones.
	Path string
	// Command is the shell command to run.
	Command string
	// Content is what OpWrite writes.
	Content string
	// Old and New are what OpEdit replaces, and with what. Old must occur
	// once in the file; for Codex, whose apply_patch edits whole lines,
	// both must be whole lines without their newline.
	Old, New string
	// From and Lines bound OpRead to Lines lines from line From
	// (1-based); 0 Lines reads the whole file, however large (Claude
	// Code's Read is then asked with allow_large).
	From, Lines int
	// Answer is the JSON object OpStructured answers with: the tool
	// call's arguments.
	Answer string
	// Timeout is the time limit asked for a shell command, where the
	// CLI's tool takes one (Claude Code's Bash); 0 asks for none and
	// leaves the CLI's default.
	Timeout time.Duration
}

// ReadFile asks the agent to read the file at path.
func ReadFile(path string) ToolCall { return ToolCall{Op: OpRead, Path: path} }

// Shell asks the agent to run command in its shell.
func Shell(command string) ToolCall { return ToolCall{Op: OpShell, Command: command} }

// ReadLines asks the agent to read n lines of the file at path from line
// from (1-based).
func ReadLines(path string, from, n int) ToolCall {
	return ToolCall{Op: OpRead, Path: path, From: from, Lines: n}
}

// EditFile asks the agent to replace old, which occurs once in the file at
// path, with new.
func EditFile(path, old, new string) ToolCall {
	return ToolCall{Op: OpEdit, Path: path, Old: old, New: new}
}

// WriteFile asks the agent to write content to the file at path.
func WriteFile(path, content string) ToolCall {
	return ToolCall{Op: OpWrite, Path: path, Content: content}
}

// Structured asks the agent to take answer, a JSON object, as its
// structured answer (OpStructured).
func Structured(answer string) ToolCall { return ToolCall{Op: OpStructured, Answer: answer} }

// Call returns a Reply that answers a turn with the tool call c.
func Call(c ToolCall) Reply { return Reply{Tool: &c} }

// Session is the script of a tool-using session: one turn per call, in
// order, each answered by the agent with the call's result, and then a
// turn answered with final, the session's last word (a handoff). It is
// what Start takes.
func Session(final string, calls ...ToolCall) []Reply {
	out := make([]Reply, 0, len(calls)+1)
	for _, c := range calls {
		out = append(out, Call(c))
	}
	return append(out, Text(final))
}

// String describes the call for messages and logs.
func (c ToolCall) String() string {
	switch c.Op {
	case OpRead:
		if c.Lines > 0 {
			return fmt.Sprintf("read %s lines %d-%d", c.Path, c.From, c.From+c.Lines-1)
		}
		return "read " + c.Path
	case OpEdit:
		return fmt.Sprintf("edit %s: %q to %q", c.Path, c.Old, c.New)
	case OpShell:
		return "shell " + c.Command
	case OpWrite:
		return fmt.Sprintf("write %s (%d bytes)", c.Path, len(c.Content))
	case OpStructured:
		return "answer " + c.Answer
	}
	return string(c.Op)
}

// toolUse is a ToolCall resolved against the tools a request declares:
// the tool's name and its input, in one of the shapes an API carries.
type toolUse struct {
	// ID is the call's id, echoed back with the result.
	ID   string
	Name string
	// Args is the input of a function tool (Anthropic tool_use, OpenAI
	// function_call, Gemini functionCall).
	Args map[string]any
	// Input is the free-form input of an OpenAI custom tool
	// (custom_tool_call): a patch for apply_patch, JavaScript for exec.
	Input string
	// Custom says the call is a custom_tool_call with Input.
	Custom bool
	// LocalShell says the call is an OpenAI local_shell_call of Argv.
	LocalShell bool
	Argv       []string
}

// size is the length of the call's input, for its output token count.
func (u toolUse) size() int {
	n := len(u.Input) + len(u.Name)
	if u.Args != nil {
		n += len(jsonString(u.Args))
	}
	for _, a := range u.Argv {
		n += len(a)
	}
	return n
}

// errNoTool is the error a turn is answered with when the request
// declares no tool that can do what the script asks.
type errNoTool struct {
	call     ToolCall
	declared []string
}

func (e errNoTool) Error() string {
	return fmt.Sprintf("mockmodel: the request declares no tool to %s (declared: %s)",
		e.call, strings.Join(e.declared, ", "))
}

// resolveTool turns c into the tool use the request's CLI understands,
// from the tools the request declares. Each operation falls back to the
// shell when the CLI has no dedicated tool for it (Codex has no read or
// write tool of its own besides apply_patch).
func resolveTool(rec Request, c ToolCall, id string) (toolUse, error) {
	tools := declaredTools(rec)
	var use toolUse
	var ok bool
	switch rec.API {
	case Anthropic:
		use, ok = anthropicTool(tools, c)
	case Responses:
		use, ok = responsesTool(tools, c)
	case Gemini:
		use, ok = geminiTool(tools, c)
	case Chat:
		use, ok = chatTool(tools, c)
	}
	if !ok {
		names := make([]string, 0, len(tools))
		for _, t := range tools {
			names = append(names, t.name)
		}
		return toolUse{}, errNoTool{call: c, declared: names}
	}
	use.ID = id
	return use, nil
}

// declaredTool is one tool a request declares: its name, and for OpenAI
// requests its type ("function", "custom", "local_shell") and whether it
// is only reachable from code mode's exec tool.
type declaredTool struct {
	name   string
	kind   string
	nested bool
}

// declaredTools lists the tools a request declares, in the shape of its
// API: Anthropic tools[].name, OpenAI tools[] (and namespaces of them,
// also sent as an input item of type additional_tools), Gemini
// tools[].functionDeclarations[].name, chat completions
// tools[].function.name.
func declaredTools(rec Request) []declaredTool {
	var out []declaredTool
	switch rec.API {
	case Anthropic:
		for _, t := range listOf(rec.JSON["tools"]) {
			if name, _ := t["name"].(string); name != "" {
				out = append(out, declaredTool{name: name})
			}
		}
	case Responses:
		out = openAITools(listOf(rec.JSON["tools"]), false)
		for _, item := range listOf(rec.JSON["input"]) {
			if item["type"] == "additional_tools" {
				out = append(out, openAITools(listOf(item["tools"]), false)...)
			}
		}
	case Chat:
		for _, t := range listOf(rec.JSON["tools"]) {
			fn, _ := t["function"].(map[string]any)
			if name, _ := fn["name"].(string); name != "" {
				out = append(out, declaredTool{name: name, kind: "function"})
			}
		}
	case Gemini:
		for _, t := range listOf(rec.JSON["tools"]) {
			for _, fd := range listOf(t["functionDeclarations"]) {
				if name, _ := fd["name"].(string); name != "" {
					out = append(out, declaredTool{name: name})
				}
			}
		}
	}
	return out
}

// openAITools reads OpenAI tool declarations, descending into namespaces.
// Codex's code mode declares a custom tool "exec" that runs JavaScript
// calling the other tools; they are then listed only in exec's
// description, so the nested tools a script needs are taken as present
// (nested) when exec is.
func openAITools(list []map[string]any, nested bool) []declaredTool {
	var out []declaredTool
	for _, t := range list {
		kind, _ := t["type"].(string)
		name, _ := t["name"].(string)
		switch kind {
		case "namespace":
			out = append(out, openAITools(listOf(t["tools"]), nested)...)
		case "local_shell":
			out = append(out, declaredTool{name: "local_shell", kind: kind, nested: nested})
		default:
			if name == "" {
				continue
			}
			out = append(out, declaredTool{name: name, kind: kind, nested: nested})
			if kind == "custom" && name == "exec" {
				desc, _ := t["description"].(string)
				for _, inner := range []string{"exec_command", "apply_patch"} {
					if strings.Contains(desc, "`"+inner+"`") {
						out = append(out, declaredTool{name: inner, kind: "function", nested: true})
					}
				}
			}
		}
	}
	return out
}

// find returns the first declared tool with one of names that is not
// nested, or else a nested one.
func find(tools []declaredTool, names ...string) (declaredTool, bool) {
	for _, nested := range []bool{false, true} {
		for _, name := range names {
			i := slices.IndexFunc(tools, func(t declaredTool) bool { return t.name == name && t.nested == nested })
			if i >= 0 {
				return tools[i], true
			}
		}
	}
	return declaredTool{}, false
}

// has reports whether tools declares a tool named name at the top level.
func has(tools []declaredTool, name string) bool {
	return slices.ContainsFunc(tools, func(t declaredTool) bool { return t.name == name && !t.nested })
}

// shellRead is the shell command that prints what c reads: the fallback
// of a read for a CLI without a read tool.
func shellRead(c ToolCall) string {
	if c.Lines > 0 {
		return fmt.Sprintf("sed -n '%d,%dp' %s", max(c.From, 1), max(c.From, 1)+c.Lines-1, shellQuote(c.Path))
	}
	return "cat -- " + shellQuote(c.Path)
}

// shellWrite is the shell command that writes content to path: the
// fallback of a write for a CLI without a write tool.
func shellWrite(path, content string) string {
	return "printf '%s' " + shellQuote(content) + " > " + shellQuote(path)
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// asShell turns a read or a write into the equivalent shell command; an
// edit has none that is both portable and exact, and a structured answer
// is no command at all, so they report false.
func asShell(c ToolCall) (ToolCall, bool) {
	switch c.Op {
	case OpRead:
		return ToolCall{Op: OpShell, Command: shellRead(c)}, true
	case OpWrite:
		return ToolCall{Op: OpShell, Command: shellWrite(c.Path, c.Content)}, true
	case OpEdit, OpStructured:
		return c, false
	}
	return c, true
}

// anthropicTool maps c to Claude Code's tools: Read {file_path, offset,
// limit, allow_large}, Bash {command, timeout in ms}, Write {file_path,
// content}, Edit {file_path, old_string, new_string}.
func anthropicTool(tools []declaredTool, c ToolCall) (toolUse, bool) {
	switch {
	case c.Op == OpRead && has(tools, "Read"):
		args := map[string]any{"file_path": c.Path, "allow_large": true}
		if c.Lines > 0 {
			args = map[string]any{"file_path": c.Path, "offset": max(c.From, 1), "limit": c.Lines}
		}
		return toolUse{Name: "Read", Args: args}, true
	case c.Op == OpWrite && has(tools, "Write"):
		return toolUse{Name: "Write", Args: map[string]any{"file_path": c.Path, "content": c.Content}}, true
	case c.Op == OpEdit && has(tools, "Edit"):
		return toolUse{Name: "Edit", Args: map[string]any{"file_path": c.Path, "old_string": c.Old, "new_string": c.New}}, true
	case !has(tools, "Bash"):
		return toolUse{}, false
	}
	c, ok := asShell(c)
	if !ok {
		return toolUse{}, false
	}
	args := map[string]any{"command": c.Command, "description": "Run a scripted command"}
	if c.Timeout > 0 {
		args["timeout"] = c.Timeout.Milliseconds()
	}
	return toolUse{Name: "Bash", Args: args}, true
}

// chatTool maps c to a tool of a chat completions client. Only the
// structured answer is scripted on this API: Qwen Code's structured_output,
// which it declares under --json-schema with the step's schema as its
// parameters. A structured answer that is not a JSON object is sent as
// it is, as a model that ignores the schema would.
func chatTool(tools []declaredTool, c ToolCall) (toolUse, bool) {
	if c.Op != OpStructured || !has(tools, "structured_output") {
		return toolUse{}, false
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Answer), &args); err != nil || args == nil {
		return toolUse{Name: "structured_output", Input: c.Answer}, true
	}
	return toolUse{Name: "structured_output", Args: args}, true
}

// geminiTool maps c to Gemini CLI's tools: read_file {file_path,
// start_line, end_line}, run_shell_command {command}, write_file
// {file_path, content}, replace {file_path, instruction, old_string,
// new_string}. Without --approval-mode yolo a headless Gemini CLI declares
// neither run_shell_command nor write_file nor replace.
func geminiTool(tools []declaredTool, c ToolCall) (toolUse, bool) {
	switch {
	case c.Op == OpRead && has(tools, "read_file"):
		args := map[string]any{"file_path": c.Path}
		if c.Lines > 0 {
			args["start_line"], args["end_line"] = max(c.From, 1), max(c.From, 1)+c.Lines-1
		}
		return toolUse{Name: "read_file", Args: args}, true
	case c.Op == OpWrite && has(tools, "write_file"):
		return toolUse{Name: "write_file", Args: map[string]any{"file_path": c.Path, "content": c.Content}}, true
	case c.Op == OpEdit && has(tools, "replace"):
		return toolUse{Name: "replace", Args: map[string]any{"file_path": c.Path, "old_string": c.Old,
			"new_string": c.New, "instruction": "Make the scripted edit."}}, true
	case !has(tools, "run_shell_command"):
		return toolUse{}, false
	}
	c, ok := asShell(c)
	if !ok {
		return toolUse{}, false
	}
	return toolUse{Name: "run_shell_command", Args: map[string]any{"command": c.Command, "description": "Run a scripted command"}}, true
}

// responsesTool maps c to the shell tools Codex declares, whichever of its
// generations it is: exec_command {cmd} (unified exec), shell {command:
// argv}, shell_command {command}, the built-in local_shell, or code mode's
// exec running JavaScript that calls tools.exec_command. A write uses
// apply_patch when declared, the shell otherwise; a read always uses the
// shell.
func responsesTool(tools []declaredTool, c ToolCall) (toolUse, bool) {
	if c.Op == OpWrite || c.Op == OpEdit {
		if t, ok := find(tools, "apply_patch"); ok {
			return applyPatch(t, c), true
		}
	}
	c, ok := asShell(c)
	if !ok {
		return toolUse{}, false
	}
	t, ok := find(tools, "exec_command", "shell_command", "shell", "local_shell")
	if !ok {
		return toolUse{}, false
	}
	if t.nested {
		return codeMode(fmt.Sprintf("const r = await tools.exec_command(%s);\ntext(r.output);",
			jsonString(map[string]any{"cmd": c.Command, "yield_time_ms": 30000}))), true
	}
	argv := []string{"bash", "-c", c.Command}
	switch t.name {
	case "exec_command":
		return toolUse{Name: t.name, Args: map[string]any{"cmd": c.Command, "yield_time_ms": 30000}}, true
	case "shell_command":
		return toolUse{Name: t.name, Args: map[string]any{"command": c.Command}}, true
	case "shell":
		return toolUse{Name: t.name, Args: map[string]any{"command": argv}}, true
	}
	return toolUse{Name: t.name, LocalShell: true, Argv: argv}, true
}

// applyPatch writes or edits c.Path with Codex's apply_patch: a free-form
// patch that adds the file or replaces the line c.Old with c.New, as a
// custom tool's input, a function's {"input": patch}, or from code mode.
func applyPatch(t declaredTool, c ToolCall) toolUse {
	var patch strings.Builder
	patch.WriteString("*** Begin Patch\n")
	if c.Op == OpEdit {
		patch.WriteString("*** Update File: " + c.Path + "\n@@\n-" + c.Old + "\n+" + c.New + "\n")
	} else {
		patch.WriteString("*** Add File: " + c.Path + "\n")
		for _, line := range strings.SplitAfter(c.Content, "\n") {
			if line != "" {
				patch.WriteString("+" + strings.TrimSuffix(line, "\n") + "\n")
			}
		}
	}
	patch.WriteString("*** End Patch\n")
	switch {
	case t.nested:
		return codeMode(fmt.Sprintf("const r = await tools.apply_patch(%s);\ntext(r);", jsonString(patch.String())))
	case t.kind == "custom":
		return toolUse{Name: t.name, Custom: true, Input: patch.String()}
	}
	return toolUse{Name: t.name, Args: map[string]any{"input": patch.String()}}
}

// codeMode is a call of Codex's code-mode tool exec, whose input is
// JavaScript that calls the nested tools and returns their output.
func codeMode(script string) toolUse {
	return toolUse{Name: "exec", Custom: true, Input: script}
}

// jsonString encodes v as JSON, which is also a JavaScript literal.
func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// listOf reads a JSON array of objects, skipping anything else.
func listOf(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
