package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Schema modes of a chat agent.
const (
	SchemaModeAuto = ""    // send response_format; drop it if the endpoint rejects it
	SchemaModeOff  = "off" // never send response_format
)

// ErrChatSpec is returned by RunChat for a ChatSpec it cannot send.
var ErrChatSpec = errors.New("agent: invalid chat spec")

// ChatMessage is one message of a chat session's history, as the chat
// completions API takes it.
type ChatMessage struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// ChatSpec describes one turn with an agent that is an OpenAI-compatible
// chat completions endpoint (Ollama, vLLM, Cerebras, OpenAI itself). Such an
// endpoint keeps no session: the caller stores each session's history and
// passes it back on the session's next turn.
type ChatSpec struct {
	// BaseURL is the API root, such as http://127.0.0.1:11434/v1; the
	// request goes to BaseURL + "/chat/completions".
	BaseURL string
	Model   string
	// APIKeyEnv names the environment variable holding the key, sent as
	// "Authorization: Bearer KEY". Empty sends no key.
	APIKeyEnv string
	// Env is where APIKeyEnv is looked up (the last setting wins); nil
	// means cadence's own environment.
	Env []string
	// SessionID is the session the turn belongs to; it is reported back
	// as Result.SessionID.
	SessionID string
	// History is the session's earlier messages, oldest first.
	History []ChatMessage
	// Prompt is the new user message.
	Prompt string
	// Schema is the step's JSON Schema, sent as response_format unless
	// SchemaMode is SchemaModeOff; nil sends none.
	Schema     json.RawMessage
	SchemaMode string
	// Output receives the request (without the key) and the response, for
	// the attempt's .out file. Nil discards them.
	Output io.Writer
	// MaxBytes bounds the response body (StopTooLarge); zero means
	// DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds the whole turn (StopTimeout); IdleTimeout bounds each
	// wait for the next bytes of the answer (StopStuck). Zero means none.
	Timeout, IdleTimeout time.Duration
	// HelpMarker is the help signal; empty means DefaultHelpMarker.
	HelpMarker string
	// Client sends the request; nil means a client with no timeout of its
	// own (the deadlines above apply).
	Client *http.Client
}

// chatRequest is the body of a chat completions request.
type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []ChatMessage   `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Stream         bool            `json:"stream"`
}

type chatResponse struct {
	Choices []struct {
		Message      ChatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int64 `json:"prompt_tokens"` // the cached ones included
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// RunChat sends one user turn of a chat session and reports the answer as a
// Result, in the same terms as Run: Text is the first choice's content,
// Transient marks 408, 429 and 5xx answers and network failures (with
// RetryAfter from the Retry-After header), Permanent marks 401, 402 and 403,
// Truncated marks finish_reason "length", and Stop says whether the turn
// was cut by Timeout, IdleTimeout, MaxBytes or ctx.
//
// When a schema is sent and the endpoint answers 400 naming
// response_format, the request is repeated once without it and
// Result.SchemaUnsupported is set, so the caller can stop asking.
//
// The returned messages are what the caller appends to the session's
// history: the prompt and the answer, or nothing when no answer came. The
// error is non-nil only when the request could not be built; every failure
// of the endpoint is described in the Result.
func RunChat(ctx context.Context, spec ChatSpec) (*Result, []ChatMessage, error) {
	if spec.BaseURL == "" || spec.Model == "" {
		return nil, nil, fmt.Errorf("%w: base_url and model are required", ErrChatSpec)
	}
	if spec.MaxBytes <= 0 {
		spec.MaxBytes = DefaultMaxBytes
	}
	if spec.HelpMarker == "" {
		spec.HelpMarker = DefaultHelpMarker
	}
	if spec.Client == nil {
		spec.Client = &http.Client{}
	}
	var format json.RawMessage
	if len(spec.Schema) > 0 && spec.SchemaMode != SchemaModeOff {
		f, err := responseFormat(spec.Schema)
		if err != nil {
			return nil, nil, err
		}
		format = f
	}
	messages := append(append([]ChatMessage(nil), spec.History...), ChatMessage{Role: "user", Content: spec.Prompt})
	url := strings.TrimRight(spec.BaseURL, "/") + "/chat/completions"
	out := newOutputCopy(spec.Output, 0, 0)

	start := time.Now()
	t := newChatTurn(ctx, spec, url, out)
	defer t.close()
	res := t.send(messages, format)
	if format != nil && res.schemaRejected {
		out.write([]byte("\n[cadence: the endpoint rejected response_format; asking again without it]\n"))
		res = t.send(messages, nil)
		res.SchemaUnsupported = true
	}
	res.Elapsed = time.Since(start)
	res.SessionID = spec.SessionID
	res.ExitCode = 0
	help := helpScanner{marker: spec.HelpMarker}
	help.text(string(res.Text))
	res.Help, res.HelpContext = help.seen, help.context
	if res.answered {
		return &res.Result, []ChatMessage{messages[len(messages)-1], {Role: "assistant", Content: string(res.Text)}}, nil
	}
	return &res.Result, nil, nil
}

// responseFormat wraps a JSON Schema as a json_schema response_format.
func responseFormat(schema json.RawMessage) (json.RawMessage, error) {
	if !json.Valid(schema) {
		return nil, fmt.Errorf("%w: the schema is not valid JSON", ErrChatSpec)
	}
	b, err := json.Marshal(map[string]any{
		"type": "json_schema",
		"json_schema": map[string]any{
			"name": "handoff", "schema": schema, "strict": false,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: encode response_format: %w", ErrChatSpec, err)
	}
	return b, nil
}

// lookupEnv finds name in env (the last setting wins), or in cadence's own
// environment when env is nil.
func lookupEnv(env []string, name string) string {
	if env == nil {
		return os.Getenv(name)
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
