# The check step: reads what implement and docs reported from the files
# cadence keeps for command steps (CADENCE_OUTPUTS_DIR/STEP.json), and
# fails when either changed no file.
set -eu
for step in implement docs; do
  out="$CADENCE_OUTPUTS_DIR/$step.json"
  grep -q '"files":\["' "$out" || { echo "$step changed no file" >&2; exit 1; }
  echo "$step: $(cat "$out")"
done
