// Package mockmodel is a scripted stand-in for the model APIs that coding
// agent CLIs talk to, for tests.
//
// A test starts a Server on a loopback port, scripts the answers the "model"
// gives (valid JSON, broken JSON, a 429 with retry-after, a 529, a slow
// answer), points a real CLI at it (Claude Code through ANTHROPIC_BASE_URL,
// Codex through a custom model provider, Gemini CLI through
// GOOGLE_GEMINI_BASE_URL, any OpenAI-compatible client through its base URL)
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
// Scripted replies are consumed only by requests that ask for the main
// answer of a turn. CLIs also send side requests (Claude Code's title and
// quota probes, Gemini CLI's model router and next-speaker checks, token
// counts); those are recorded too but get a harmless default answer, so a
// script lists exactly the answers of the turns a test drives.
package mockmodel
