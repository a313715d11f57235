// Package ghsummary tells GitHub Actions how a run went, from the run's
// stored history after a `cadence run` or `cadence resume` process: a
// Markdown job summary (GITHUB_STEP_SUMMARY), step outputs (GITHUB_OUTPUT)
// and ::error / ::warning annotations.
//
// Everything it writes is built from history.Report, never from the live
// events, so a resumed run's summary shows the whole run, including what
// earlier jobs did. Step errors, diagnoses and gate prompts come from agent
// output and are hostile: Markdown text is escaped, code blocks are fenced
// longer than any backtick run inside them, annotation text is
// percent-encoded onto one line, and outputs use the heredoc form with a
// random delimiter that the value cannot contain.
package ghsummary
