-- Workflows as graphs (SPEC §16): the values a run was given for its
-- inputs (a JSON object; '' for a run of a workflow without inputs), and
-- a step's decision, committed once: its `when` evaluated (the expression,
-- its value and the values it read), or why it was skipped.
ALTER TABLE runs ADD COLUMN inputs_json TEXT NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN decision_json TEXT NOT NULL DEFAULT '';
