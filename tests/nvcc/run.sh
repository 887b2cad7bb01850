#!/usr/bin/env bash
# run.sh <pattern>... -- <program> [args...]
# Runs the program; passes when it exits 0 and its output (stdout and stderr) matches every
# extended regular expression given before `--`.
set -uo pipefail
patterns=()
while (($#)) && [[ $1 != -- ]]; do
  patterns+=("$1")
  shift
done
shift
output=$("$@" 2>&1)
rc=$?
printf '%s\n' "$output"
if ((rc != 0)); then
  echo "run.sh: $1 exited with $rc" >&2
  exit 1
fi
for p in "${patterns[@]}"; do
  if ! grep -Eq -- "$p" <<<"$output"; then
    echo "run.sh: output does not match: $p" >&2
    exit 1
  fi
done
