#!/bin/sh
# Prints the module's packages as {"packages": [{"path": "./internal/agent"}, ...]}.
set -eu
cd "$CADENCE_PROJECT_DIR"
printf '{"packages": ['
sep=''
for p in $(go list -f '{{.Dir}}' ./...); do
	rel=".${p#"$CADENCE_PROJECT_DIR"}"
	printf '%s{"path": "%s"}' "$sep" "$rel"
	sep=', '
done
printf ']}\n'
