#!/bin/sh
# Runs the tests of one package (the map item's key, such as ./internal/agent)
# and prints {"package": ..., "ok": true, "seconds": N}; a failure prints
# ok: false and the end of the output, which the schema refuses, so the
# attempt fails and the item is retried, then dead-lettered.
set -u
cd "$CADENCE_PROJECT_DIR"
pkg="$CADENCE_ITEM_KEY"
start=$(date +%s)
out=$(go test -count=1 "$pkg" 2>&1)
code=$?
secs=$(( $(date +%s) - start ))
if [ "$code" -eq 0 ]; then
	printf '{"package": "%s", "ok": true, "seconds": %d}\n' "$pkg" "$secs"
else
	tail=$(printf '%s\n' "$out" | tail -n 20 | sed 's/\\/\\\\/g; s/"/\\"/g' | awk '{printf "%s\\n", $0}')
	printf '{"package": "%s", "ok": false, "seconds": %d, "output": "%s"}\n' "$pkg" "$secs" "$tail"
fi
