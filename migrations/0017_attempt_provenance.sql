-- Where an attempt's handoff was found (SPEC §18 "Provenance"): the whole
-- output, a json or unlabelled fence, a handoff file, or prose; for a
-- failed attempt, where the value refused as a handoff was. '' when no
-- value was found, and on a row written before.
ALTER TABLE attempts ADD COLUMN provenance TEXT NOT NULL DEFAULT '';
