# The merge step: reads the gate's answer from the files cadence keeps
# for command steps (CADENCE_OUTPUTS_DIR/STEP.json), never through a
# shell that sees agent output, and says who approved.
set -eu
answer="$CADENCE_OUTPUTS_DIR/merge-gate.json"
grep -q '"approved":true' "$answer" || { echo "the merge was not approved" >&2; exit 1; }
echo "merged: $(cat "$answer")"
