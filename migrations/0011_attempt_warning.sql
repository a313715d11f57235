-- A warning about an attempt that succeeded anyway, such as an agent that
-- exited non-zero after printing a valid handoff; '' when there is none.
ALTER TABLE attempts ADD COLUMN warning TEXT NOT NULL DEFAULT '';
