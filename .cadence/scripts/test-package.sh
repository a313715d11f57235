#!/bin/sh
# Runs the tests of one package (the map item's key, such as ./internal/agent)
# and prints {"package": ..., "ok": true, "seconds": N}. A failure prints
# ok: false, "failed": each failing test (the innermost of subtests) with
# the first line it logged, and the output from the first failing test on
# (else its end). The schema refuses each entry of "failed" at its own
# pointer, /failed/TestName, so the attempt's error, and the dead-letter
# entry of a package that fails twice, name the failing test.
set -u
cd "$CADENCE_PROJECT_DIR"
pkg="$CADENCE_ITEM_KEY"
start=$(date +%s)
out=$(go test -count=1 "$pkg" 2>&1)
code=$?
secs=$(( $(date +%s) - start ))
if [ "$code" -eq 0 ]; then
	printf '{"package": "%s", "ok": true, "seconds": %d}\n' "$pkg" "$secs"
	exit 0
fi
failed=$(printf '%s\n' "$out" | awk '
	function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return s }
	/^ *--- FAIL: / { name = $3; if (!(name in seen)) { seen[name] = 1; order[++n] = name }; next }
	/^(FAIL|ok|PASS|exit status)/ { next }
	name != "" && !(name in msg) { line = $0; sub(/^[ \t]+/, "", line); msg[name] = substr(line, 1, 200) }
	END {
		shown = 0
		for (i = 1; i <= n && shown < 10; i++) {
			t = order[i]; leaf = 1
			for (j = 1; j <= n; j++) if (index(order[j], t "/") == 1) leaf = 0
			if (!leaf) continue
			printf "%s\"%s\": \"%s\"", (shown ? ", " : ""), esc(t), esc(msg[t]); shown++
		}
		if (!shown) {
			# No test reported a failure: the package did not build, or
			# its test binary died first; its first error says why.
			printf "\"no_test_ran\": \"%s\"", esc(first)
		}
	}
	first == "" && !/^#/ { first = substr($0, 1, 200) }
')
tail=$(printf '%s\n' "$out" | awk '/--- FAIL:/ { s = 1 } s' | head -n 40)
if [ -z "$tail" ]; then
	tail=$(printf '%s\n' "$out" | tail -n 20)
fi
tail=$(printf '%s\n' "$tail" | tr '\t' ' ' | sed 's/\\/\\\\/g; s/"/\\"/g' | awk '{ printf "%s\\n", $0 }')
printf '{"package": "%s", "ok": false, "seconds": %d, "failed": {%s}, "output": "%s"}\n' "$pkg" "$secs" "$failed" "$tail"
