#!/bin/sh
# go vet and gofmt over the tree: {"ok": true} or ok: false with what they said.
set -u
cd "$CADENCE_PROJECT_DIR"
out=$( { go vet ./... 2>&1; gofmt -l cmd internal migrations; } | sed 's/\\/\\\\/g; s/"/\\"/g' | awk '{printf "%s\\n", $0}')
if [ -z "$out" ]; then
	echo '{"ok": true}'
else
	printf '{"ok": false, "output": "%s"}\n' "$out"
fi
