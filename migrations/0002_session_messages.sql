-- The message history of agent sessions that cadence itself keeps: an
-- `openai` agent is a chat-completions endpoint with no memory, so a
-- follow-up in the same session resends these messages.
CREATE TABLE session_messages (
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT    NOT NULL,
    step_id    TEXT    NOT NULL,
    attempt    INTEGER NOT NULL,
    role       TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    content    TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (run_id, step_id) REFERENCES steps (run_id, step_id)
) STRICT;
