#!/bin/sh
# run.sh runs the project's workflow, or continues its unfinished run:
# it answers a gate first when CADENCE_APPROVE or CADENCE_REJECT names
# one. cadence itself writes the status, run_id and waiting_gates outputs
# and the job summary; this script adds exit_code, and fails the step
# only for the exit codes in CADENCE_FAIL_ON, so that a run waiting at a
# gate (5) or interrupted (3) ends the job green with its state saved.
#
# Environment:
#   CADENCE_DIR       the project directory (default .)
#   CADENCE_WORKFLOW  the workflow file (default the project's)
#   CADENCE_APPROVE   a gate to approve before resuming
#   CADENCE_REJECT    a gate to reject before resuming (needs CADENCE_COMMENT)
#   CADENCE_COMMENT   the answer's comment
#   CADENCE_BY        who answered (default $GITHUB_ACTOR)
#   CADENCE_ARGS      more flags for run and resume (and approve --resume),
#                     split on spaces, such as --max-wait 30m
#   CADENCE_RUN_ARGS  more flags for a new run only, such as --input x=1
#   CADENCE_FAIL_ON   exit codes that fail the step (default "1 2 4")
set -u

dir=${CADENCE_DIR:-.}
fail_on=${CADENCE_FAIL_ON:-1 2 4}
by=${CADENCE_BY:-${GITHUB_ACTOR:-github-actions}}
comment=${CADENCE_COMMENT:-}
set --
if [ -n "${CADENCE_WORKFLOW:-}" ]; then
	set -- --workflow "$CADENCE_WORKFLOW"
fi
# shellcheck disable=SC2086 # CADENCE_ARGS is a list of flags
set -- "$@" ${CADENCE_ARGS:-}

# unfinished succeeds when the project has a run that resume continues.
unfinished() {
	for s in waiting interrupted stopped running; do
		out=$(cadence runs --json --limit 1 --status "$s" "$dir") || return 1
		case $out in
		"[]" | "") ;;
		*) return 0 ;;
		esac
	done
	return 1
}

# refuse prints why the inputs are refused and ends like a usage error.
refuse() {
	echo "cadence action: $1" >&2
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		printf 'status=error\nexit_code=2\n' >>"$GITHUB_OUTPUT"
	fi
	exit 2
}

if [ -n "${CADENCE_APPROVE:-}" ] && [ -n "${CADENCE_REJECT:-}" ]; then
	refuse "approve and reject both set; answer a gate one way"
fi
# A gate is a step id or a path in a loop; one that starts with - would be
# read as a flag.
case ${CADENCE_APPROVE:-}${CADENCE_REJECT:-} in
-* | *[!A-Za-z0-9_./-]*)
	refuse "gate '${CADENCE_APPROVE:-}${CADENCE_REJECT:-}' is not a step id (letters, digits, _ . / -, not starting with -)"
	;;
esac

if [ -n "${CADENCE_APPROVE:-}" ]; then
	cadence approve "$CADENCE_APPROVE" "$dir" --by "$by" ${comment:+--comment "$comment"} --resume "$@"
	code=$?
elif [ -n "${CADENCE_REJECT:-}" ]; then
	cadence reject "$CADENCE_REJECT" "$dir" --by "$by" --comment "${comment:-rejected by $by}" --resume "$@"
	code=$?
elif unfinished; then
	cadence resume "$dir" "$@"
	code=$?
else
	# shellcheck disable=SC2086 # CADENCE_RUN_ARGS is a list of flags
	cadence run "$dir" "$@" ${CADENCE_RUN_ARGS:-}
	code=$?
fi

if [ -n "${GITHUB_OUTPUT:-}" ]; then
	echo "exit_code=$code" >>"$GITHUB_OUTPUT"
fi
for c in $fail_on; do
	if [ "$c" = "$code" ]; then
		exit "$code"
	fi
done
exit 0
