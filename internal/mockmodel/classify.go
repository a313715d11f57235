package mockmodel

import (
	"encoding/json"
	"strings"
)

// Kinds of request. A turn consumes a scripted reply; every other kind is a
// side request a CLI makes around a turn and gets a default answer.
const (
	KindTurn        = "turn"         // the main answer of a turn
	KindCountTokens = "count_tokens" // Anthropic count_tokens, Gemini countTokens
	KindRouter      = "router"       // Gemini CLI's model router (complexity score)
	KindNextSpeaker = "next_speaker" // Gemini CLI's next-speaker check
	KindLoopCheck   = "loop_check"   // Gemini CLI's check for an unproductive loop
	KindCompact     = "compact"      // a request to summarise the conversation so far
	KindMemory      = "memory"       // a background request to extract memories from the conversation
	KindTitle       = "title"        // a request for a title of the session
	KindUnknown     = "unknown"      // a path the server does not implement
)

// wantsStream reports whether the client asked for a streamed answer.
func wantsStream(r Request) bool {
	if r.API == Gemini {
		return r.Query.Get("alt") == "sse"
	}
	b, _ := r.JSON["stream"].(bool)
	return b
}

// classify says whether a request is a turn or which side request it is.
//
// Observed side requests: Gemini CLI 0.61 asks a flash-lite model, through
// non-streaming generateContent with a responseJsonSchema, to score the
// prompt's complexity before each turn (its model router), and may ask
// whether the user or the model speaks next; after 30 turns of one prompt
// (a long tool-using session) it asks, the same way, whether the
// conversation is stuck in a loop. Claude Code 2.1 in print mode
// (-p) sends only the turn itself; count_tokens is handled in case it is
// used.
func classify(r Request) string {
	switch r.API {
	case Unknown:
		return KindUnknown
	case Anthropic:
		if strings.HasSuffix(r.Path, "/count_tokens") {
			return KindCountTokens
		}
		if isCompaction(r) {
			return KindCompact
		}
	case Responses:
		if isCompaction(r) {
			return KindCompact
		}
	case Chat:
		if isMemoryExtraction(r) {
			return KindMemory
		}
		if isTitleRequest(r) {
			return KindTitle
		}
	case Gemini:
		_, method, _ := geminiPath(r.Path)
		if method == "countTokens" {
			return KindCountTokens
		}
		if method == "generateContent" {
			return geminiSideKind(r)
		}
	}
	return KindTurn
}

// compactPrompts open the prompts with which CLIs ask the model to
// summarise the conversation so far, to replace it once the context
// fills up: Codex 0.169's (seen in a long tool-using session) and Claude
// Code 2.1's (read from its binary). The summary is a side request: the
// session goes on after it with the script's next turn.
var compactPrompts = []string{
	"You are performing a CONTEXT CHECKPOINT COMPACTION",
	"Your task is to create a detailed summary of the conversation so far",
}

// isCompaction reports whether the request's last user message asks for a
// summary of the conversation.
func isCompaction(r Request) bool {
	last := r.LastUserText()
	for _, p := range compactPrompts {
		if strings.Contains(last, p) {
			return true
		}
	}
	return false
}

// memoryPrompts open the prompts with which CLIs ask a background
// subagent to save what the conversation taught: Qwen Code 0.24's managed
// auto-memory, which runs after every headless turn unless its setting
// memory.enableManagedAutoMemory is false (read from its bundle and seen
// against the mock).
var memoryPrompts = []string{
	"update durable managed memory",
}

// isMemoryExtraction reports whether the request's last user message
// asks for the conversation's memories.
func isMemoryExtraction(r Request) bool {
	last := r.LastUserText()
	for _, p := range memoryPrompts {
		if strings.Contains(last, p) {
			return true
		}
	}
	return false
}

// titleSystem opens the system message with which opencode 1.18 asks a
// small model, alongside the first turn of a session, for the session's
// title (the user message is the prompt itself).
const titleSystem = "You are a title generator."

// isTitleRequest reports whether the request's system message is
// opencode's title generator's.
func isTitleRequest(r Request) bool {
	for _, m := range listOf(r.JSON["messages"]) {
		if role, _ := m["role"].(string); role == "system" && strings.HasPrefix(strings.TrimSpace(textOf(m["content"])), titleSystem) {
			return true
		}
	}
	return false
}

// geminiSideKind recognises Gemini CLI's structured side requests by the
// properties of the JSON schema they ask the answer to follow.
func geminiSideKind(r Request) string {
	cfg, _ := r.JSON["generationConfig"].(map[string]any)
	schema := cfg["responseJsonSchema"]
	if schema == nil {
		schema = cfg["responseSchema"]
	}
	b, _ := json.Marshal(schema)
	switch {
	case strings.Contains(string(b), `"complexity_score"`):
		return KindRouter
	case strings.Contains(string(b), `"next_speaker"`):
		return KindNextSpeaker
	case strings.Contains(string(b), `"unproductive_state_confidence"`):
		return KindLoopCheck
	}
	return KindTurn
}

// sideReply is the default answer to a request of r's kind; for a turn it
// is replaced by the scripted reply.
func sideReply(r Request) Reply {
	switch r.Kind {
	case KindUnknown:
		return Reply{Status: 404}
	case KindRouter:
		return Reply{Text: `{"complexity_reasoning": "A short, simple request.", "complexity_score": 10}`}
	case KindNextSpeaker:
		return Reply{Text: `{"reasoning": "The model answered the request.", "next_speaker": "user"}`}
	case KindMemory:
		return Reply{Text: "Nothing durable to remember."}
	case KindTitle:
		return Reply{Text: "Mock session"}
	case KindCompact:
		return Reply{Text: "The scripted session is under way: every tool call so far ran and returned its result. Go on with the next step."}
	case KindLoopCheck:
		return Reply{Text: `{"unproductive_state_analysis": "Each step makes progress.", "unproductive_state_confidence": 0}`}
	}
	return Reply{Text: "ok"}
}
