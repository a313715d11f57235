// Package mockmodel is a scripted stand-in for the model APIs that coding
// agent CLIs talk to, for tests.
//
// A test starts a Server on a loopback port, scripts the answers the "model"
// gives (valid JSON, broken JSON, a 429 with retry-after, a 529, a slow
// answer), points a real CLI at it (Claude Code through ANTHROPIC_BASE_URL,
// Codex through a custom model provider, Gemini CLI through
// GOOGLE_GEMINI_BASE_URL, Qwen Code and any OpenAI-compatible client through
// its base URL)
// and afterwards asserts on what the model was sent.
//
// The server speaks enough of four wire protocols for a CLI to complete a
// turn:
//
//   - Anthropic Messages: POST /v1/messages, SSE or plain JSON, and
//     POST /v1/messages/count_tokens.
//   - OpenAI Responses: POST /v1/responses, SSE or plain JSON.
//   - Gemini: POST /v1beta/models/{model}:generateContent and
//     :streamGenerateContent (alt=sse or a JSON array), and :countTokens.
//   - OpenAI chat completions: POST /v1/chat/completions, SSE or plain JSON.
//
// A scripted reply can also be a tool call (Call, Session): read a file,
// run a shell command, write or edit a file. The server answers the turn
// with a call of the tool the request declares for it, in the request's
// wire format: Claude Code's Read, Bash, Write and Edit; Codex's
// exec_command (or shell, or local_shell, or code mode's exec calling
// exec_command) and apply_patch; Gemini CLI's read_file,
// run_shell_command, write_file and replace. The real CLI runs it and
// sends the result back in its next turn (Request.ToolResults), so a test
// can drive a whole tool-using session and see every result.
//
// Scripted replies are consumed only by requests that ask for the main
// answer of a turn. CLIs also send side requests (Claude Code's title and
// quota probes, Gemini CLI's model router and next-speaker checks, Qwen
// Code's memory extraction, token counts); those are recorded too but get a harmless default answer, so a
// script lists exactly the answers of the turns a test drives.
package mockmodel
