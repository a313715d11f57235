-- Number 0007 is reserved for a migration made alongside this one, on
-- another branch; this placeholder goes when that file arrives.
SELECT 1;
