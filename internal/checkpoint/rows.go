package checkpoint

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// The *Row types mirror the tables column for column. They exist so the
// public types stay free of storage concerns (NULL handling, the timestamp
// text format, JSON columns) and each conversion lives in one place.

type runRow struct {
	Project        string            `db:"project"`
	ID             string            `db:"id"`
	Status         string            `db:"status"`
	WorkflowPath   string            `db:"workflow_path"`
	WorkflowSHA256 string            `db:"workflow_sha256"`
	WorkflowYAML   string            `db:"workflow_yaml"`
	WorkflowFiles  sql.Null[string]  `db:"workflow_files"`
	BudgetUSD      sql.Null[float64] `db:"budget_usd"`
	StartedAt      dbTime            `db:"started_at"`
	FinishedAt     nullTime          `db:"finished_at"`
	UpdatedAt      dbTime            `db:"updated_at"`
	InputsJSON     string            `db:"inputs_json"`
}

func runToRow(r Run) runRow {
	return runRow{
		ID:             r.ID,
		Status:         string(r.status),
		WorkflowPath:   r.WorkflowPath,
		WorkflowSHA256: r.WorkflowSHA256,
		WorkflowYAML:   string(r.WorkflowYAML),
		WorkflowFiles:  filesToColumn(r.WorkflowFiles),
		BudgetUSD:      nullOf(r.BudgetUSD),
		StartedAt:      dbTime(r.StartedAt),
		FinishedAt:     toNullTime(r.FinishedAt),
		UpdatedAt:      dbTime(r.UpdatedAt),
		InputsJSON:     cleanText(string(r.InputsJSON)),
	}
}

func (r runRow) run() Run {
	return Run{
		ID:             r.ID,
		status:         RunStatus(r.Status),
		WorkflowPath:   r.WorkflowPath,
		WorkflowSHA256: r.WorkflowSHA256,
		WorkflowYAML:   []byte(r.WorkflowYAML),
		WorkflowFiles:  filesOfColumn(r.WorkflowFiles),
		BudgetUSD:      ptrOf(r.BudgetUSD),
		StartedAt:      time.Time(r.StartedAt),
		FinishedAt:     r.FinishedAt.t,
		UpdatedAt:      time.Time(r.UpdatedAt),
		InputsJSON:     textOrNil(r.InputsJSON),
	}
}

// filesToColumn encodes a run's workflow files as a JSON object; nil
// stays NULL.
func filesToColumn(files map[string]string) sql.Null[string] {
	if files == nil {
		return sql.Null[string]{}
	}
	b, _ := json.Marshal(files) // a map of strings always encodes
	return sql.Null[string]{V: string(b), Valid: true}
}

// filesOfColumn decodes workflow_files. NULL, and a value that is not a
// JSON object of strings, is nil: the run is then compared by its
// workflow file alone, as an older cadence's run is.
func filesOfColumn(c sql.Null[string]) map[string]string {
	if !c.Valid {
		return nil
	}
	var files map[string]string
	if err := json.Unmarshal([]byte(c.V), &files); err != nil || files == nil {
		return nil
	}
	return files
}

type stepRow struct {
	RunID        string           `db:"run_id"`
	ID           string           `db:"step_id"`
	ItemKey      string           `db:"item_key"`
	Idx          int64            `db:"idx"`
	ItemIdx      int64            `db:"item_idx"`
	ItemJSON     sql.Null[string] `db:"item_json"`
	Agent        string           `db:"agent"`
	Status       string           `db:"status"`
	MaxAttempts  int64            `db:"max_attempts"`
	NextRetryAt  nullTime         `db:"next_retry_at"`
	DelayMS      sql.Null[int64]  `db:"delay_ms"`
	SessionID    string           `db:"session_id"`
	FreshSession bool             `db:"fresh_session"`
	HandoffJSON  sql.Null[string] `db:"handoff_json"`
	HelpRounds   int64            `db:"help_rounds"`
	Advice       string           `db:"advice"`
	CostUSD      float64          `db:"cost_usd"`
	CostKnown    bool             `db:"cost_known"`
	Turns        int64            `db:"turns"`
	InputTokens  int64            `db:"input_tokens"`
	OutputTokens int64            `db:"output_tokens"`
	UpdatedAt    dbTime           `db:"updated_at"`
	BaseCommit   string           `db:"base_commit"`
	DecisionJSON string           `db:"decision_json"`
	CachedTokens int64            `db:"cached_tokens"`
}

func stepToRow(s Step) stepRow {
	return stepRow{
		RunID:        s.RunID,
		ID:           s.ID,
		ItemKey:      s.ItemKey,
		Idx:          int64(s.Idx),
		ItemIdx:      int64(s.ItemIdx),
		ItemJSON:     nullText(s.ItemJSON),
		Agent:        s.Agent,
		Status:       string(s.status),
		MaxAttempts:  int64(s.MaxAttempts),
		NextRetryAt:  toNullTime(s.NextRetryAt),
		DelayMS:      nullOf(s.DelayMS),
		SessionID:    cleanText(s.SessionID),
		FreshSession: s.FreshSession,
		HandoffJSON:  nullCleanText(s.HandoffJSON),
		HelpRounds:   int64(s.HelpRounds),
		Advice:       cleanText(s.Advice),
		CostUSD:      s.CostUSD,
		CostKnown:    s.CostKnown,
		Turns:        int64(s.Turns),
		InputTokens:  s.InputTokens,
		OutputTokens: s.OutputTokens,
		UpdatedAt:    dbTime(s.UpdatedAt),
		BaseCommit:   s.BaseCommit,
		DecisionJSON: cleanText(string(s.DecisionJSON)),
		CachedTokens: s.CachedTokens,
	}
}

func (r stepRow) step() Step {
	return Step{
		RunID:        r.RunID,
		ID:           r.ID,
		ItemKey:      r.ItemKey,
		Idx:          int(r.Idx),
		ItemIdx:      int(r.ItemIdx),
		ItemJSON:     textBytes(r.ItemJSON),
		Agent:        r.Agent,
		status:       StepStatus(r.Status),
		MaxAttempts:  int(r.MaxAttempts),
		NextRetryAt:  r.NextRetryAt.t,
		DelayMS:      ptrOf(r.DelayMS),
		SessionID:    r.SessionID,
		FreshSession: r.FreshSession,
		HandoffJSON:  textBytes(r.HandoffJSON),
		HelpRounds:   int(r.HelpRounds),
		Advice:       r.Advice,
		CostUSD:      r.CostUSD,
		CostKnown:    r.CostKnown,
		Turns:        int(r.Turns),
		InputTokens:  r.InputTokens,
		OutputTokens: r.OutputTokens,
		UpdatedAt:    time.Time(r.UpdatedAt),
		BaseCommit:   r.BaseCommit,
		DecisionJSON: textOrNil(r.DecisionJSON),
		CachedTokens: r.CachedTokens,
	}
}

type attemptRow struct {
	RunID         string            `db:"run_id"`
	StepID        string            `db:"step_id"`
	ItemKey       string            `db:"item_key"`
	N             int64             `db:"n"`
	Kind          string            `db:"kind"`
	Status        string            `db:"status"`
	Class         string            `db:"class"`
	Error         string            `db:"error"`
	DetailsJSON   sql.Null[string]  `db:"details_json"`
	Prompt        string            `db:"prompt"`
	StartedAt     dbTime            `db:"started_at"`
	FinishedAt    nullTime          `db:"finished_at"`
	PID           sql.Null[int64]   `db:"pid"`
	ExitCode      sql.Null[int64]   `db:"exit_code"`
	SessionID     string            `db:"session_id"`
	CircuitGen    int64             `db:"circuit_gen"`
	DelayMS       sql.Null[int64]   `db:"delay_ms"`
	NextRetryAt   nullTime          `db:"next_retry_at"`
	RetryAfterMS  sql.Null[int64]   `db:"retry_after_ms"`
	RepairsJSON   sql.Null[string]  `db:"repairs_json"`
	OutputFile    string            `db:"output_file"`
	FailedHandoff string            `db:"failed_handoff"`
	CostUSD       sql.Null[float64] `db:"cost_usd"`
	Turns         int64             `db:"turns"`
	InputTokens   int64             `db:"input_tokens"`
	OutputTokens  int64             `db:"output_tokens"`
	HelpContext   string            `db:"help_context"`
	Uncounted     bool              `db:"uncounted"`
	Warning       string            `db:"warning"`
	CachedTokens  int64             `db:"cached_tokens"`
	Agent         string            `db:"agent"`
	Provenance    string            `db:"provenance"`
	Snapshot      string            `db:"snapshot"`
	SnapshotAfter string            `db:"snapshot_after"`
}

func attemptToRow(a Attempt) (attemptRow, error) {
	var repairs sql.Null[string]
	if a.Repairs != nil {
		b, err := json.Marshal(a.Repairs)
		if err != nil {
			return attemptRow{}, fmt.Errorf("encode repairs: %w", err)
		}
		repairs = sql.Null[string]{V: string(b), Valid: true}
	}
	return attemptRow{
		RunID:         a.RunID,
		StepID:        a.StepID,
		ItemKey:       a.ItemKey,
		N:             int64(a.N),
		Kind:          a.Kind,
		Status:        string(a.status),
		Class:         a.Class,
		Error:         cleanText(a.Error),
		DetailsJSON:   nullCleanText(a.DetailsJSON),
		Prompt:        cleanText(a.Prompt),
		StartedAt:     dbTime(a.StartedAt),
		FinishedAt:    toNullTime(a.FinishedAt),
		PID:           nullInt(a.PID),
		ExitCode:      nullInt(a.ExitCode),
		SessionID:     cleanText(a.SessionID),
		CircuitGen:    a.CircuitGen,
		DelayMS:       nullOf(a.DelayMS),
		NextRetryAt:   toNullTime(a.NextRetryAt),
		RetryAfterMS:  nullOf(a.RetryAfterMS),
		RepairsJSON:   repairs,
		OutputFile:    a.OutputFile,
		FailedHandoff: a.FailedHandoff,
		CostUSD:       nullOf(a.CostUSD),
		Turns:         int64(a.Turns),
		InputTokens:   a.InputTokens,
		OutputTokens:  a.OutputTokens,
		HelpContext:   cleanText(a.HelpContext),
		Uncounted:     a.Uncounted,
		Warning:       cleanText(a.Warning),
		CachedTokens:  a.CachedTokens,
		Agent:         a.Agent,
		Provenance:    a.Provenance,
		Snapshot:      a.Snapshot,
		SnapshotAfter: a.SnapshotAfter,
	}, nil
}

func (r attemptRow) attempt() (Attempt, error) {
	var repairs []string
	if r.RepairsJSON.Valid {
		if err := json.Unmarshal([]byte(r.RepairsJSON.V), &repairs); err != nil {
			return Attempt{}, fmt.Errorf("attempt %s/%s/%d: decode repairs: %w", r.RunID, r.StepID, r.N, err)
		}
		if repairs == nil { // a stored JSON null
			repairs = []string{}
		}
	}
	return Attempt{
		RunID:         r.RunID,
		StepID:        r.StepID,
		ItemKey:       r.ItemKey,
		N:             int(r.N),
		Kind:          r.Kind,
		status:        AttemptStatus(r.Status),
		Class:         r.Class,
		Error:         r.Error,
		DetailsJSON:   textBytes(r.DetailsJSON),
		Prompt:        r.Prompt,
		StartedAt:     time.Time(r.StartedAt),
		FinishedAt:    r.FinishedAt.t,
		PID:           intPtr(r.PID),
		ExitCode:      intPtr(r.ExitCode),
		SessionID:     r.SessionID,
		CircuitGen:    r.CircuitGen,
		DelayMS:       ptrOf(r.DelayMS),
		NextRetryAt:   r.NextRetryAt.t,
		RetryAfterMS:  ptrOf(r.RetryAfterMS),
		Repairs:       repairs,
		OutputFile:    r.OutputFile,
		FailedHandoff: r.FailedHandoff,
		CostUSD:       ptrOf(r.CostUSD),
		Turns:         int(r.Turns),
		InputTokens:   r.InputTokens,
		OutputTokens:  r.OutputTokens,
		HelpContext:   r.HelpContext,
		Uncounted:     r.Uncounted,
		Warning:       r.Warning,
		CachedTokens:  r.CachedTokens,
		Agent:         r.Agent,
		Provenance:    r.Provenance,
		Snapshot:      r.Snapshot,
		SnapshotAfter: r.SnapshotAfter,
	}, nil
}

type circuitRow struct {
	Project    string   `db:"project"`
	Agent      string   `db:"agent"`
	State      string   `db:"state"`
	Failures   int64    `db:"failures"`
	Generation int64    `db:"generation"`
	OpenedAt   nullTime `db:"opened_at"`
	OpenUntil  nullTime `db:"open_until"`
	Trials     int64    `db:"trials"`
	Successes  int64    `db:"successes"`
	UpdatedAt  dbTime   `db:"updated_at"`
	ConfigHash string   `db:"config_hash"`
}

func circuitToRow(c Circuit) circuitRow {
	return circuitRow{
		Agent:      c.Agent,
		State:      c.State,
		Failures:   int64(c.Failures),
		Generation: c.Generation,
		OpenedAt:   toNullTime(c.OpenedAt),
		OpenUntil:  toNullTime(c.OpenUntil),
		Trials:     int64(c.Trials),
		Successes:  int64(c.Successes),
		UpdatedAt:  dbTime(c.UpdatedAt),
		ConfigHash: c.ConfigHash,
	}
}

func (r circuitRow) circuit() Circuit {
	return Circuit{
		Agent:      r.Agent,
		State:      r.State,
		Failures:   int(r.Failures),
		Generation: r.Generation,
		OpenedAt:   r.OpenedAt.t,
		OpenUntil:  r.OpenUntil.t,
		Trials:     int(r.Trials),
		Successes:  int(r.Successes),
		UpdatedAt:  time.Time(r.UpdatedAt),
		ConfigHash: r.ConfigHash,
	}
}

type eventRow struct {
	Project string           `db:"project"`
	ID      int64            `db:"id"`
	RunID   sql.Null[string] `db:"run_id"`
	At      dbTime           `db:"at"`
	Kind    string           `db:"kind"`
	Detail  string           `db:"detail"`
}

func eventToRow(e Event) eventRow {
	return eventRow{
		ID:     e.ID,
		RunID:  sql.Null[string]{V: e.RunID, Valid: e.RunID != ""},
		At:     dbTime(e.At),
		Kind:   e.Kind,
		Detail: cleanText(e.Detail),
	}
}

func (r eventRow) event() Event {
	return Event{ID: r.ID, RunID: r.RunID.V, At: time.Time(r.At), Kind: r.Kind, Detail: r.Detail}
}

// nullOf maps a nil pointer to NULL and any other to its value.
func nullOf[T any](p *T) sql.Null[T] {
	if p == nil {
		return sql.Null[T]{}
	}
	return sql.Null[T]{V: *p, Valid: true}
}

// ptrOf maps NULL to a nil pointer and any other value to a fresh pointer.
func ptrOf[T any](n sql.Null[T]) *T {
	if !n.Valid {
		return nil
	}
	v := n.V
	return &v
}

func nullInt(p *int) sql.Null[int64] {
	if p == nil {
		return sql.Null[int64]{}
	}
	return sql.Null[int64]{V: int64(*p), Valid: true}
}

func intPtr(n sql.Null[int64]) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.V)
	return &v
}

// nullText stores a nil byte slice as NULL and any other as text.
func nullText(b []byte) sql.Null[string] {
	if b == nil {
		return sql.Null[string]{}
	}
	return sql.Null[string]{V: string(b), Valid: true}
}

func textBytes(n sql.Null[string]) []byte {
	if !n.Valid {
		return nil
	}
	return []byte(n.V)
}

// textOrNil is a NOT NULL text column as bytes: ” is nil.
func textOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// cleanText makes text that came from an agent storable on both engines:
// PostgreSQL's text type holds neither NUL nor invalid UTF-8, which an
// agent's output may contain. Each NUL, and each run of invalid bytes,
// becomes U+FFFD, on SQLite too, so that both engines store and show the
// same text.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// nullCleanText is nullText of cleanText: nil stays NULL.
func nullCleanText(b []byte) sql.Null[string] {
	if b == nil {
		return sql.Null[string]{}
	}
	return sql.Null[string]{V: cleanText(string(b)), Valid: true}
}
