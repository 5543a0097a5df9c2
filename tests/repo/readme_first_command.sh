#!/usr/bin/env bash
# The README's first command, less its set-up (scripts/test.sh has run it): FASA on the default
# model answers the demo prompt's question as full attention does ("Bingley") and ends with the
# summary line.   readme_first_command.sh REPO_ROOT
set -euo pipefail
cd "$1"
line=$(awk '/^```sh$/ { getline; print; exit }' README.md)
cmd=${line#bash scripts/setup.sh && }
[ "$cmd" != "$line" ] || { echo "the README's first command does not start with the set-up" >&2; exit 1; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$(eval "$cmd" 2>"$err")
grep -q "Bingley" <<<"$out" || { echo "FASA's answer lacks Bingley: $out" >&2; exit 1; }
grep -q "^fasa: calibration: " "$err" || { echo "no calibration line" >&2; cat "$err" >&2; exit 1; }
grep -q "^fasa: summary: KV read: .*% of dense attention (.*/token instead of .*/token) with policy fasa; decoding .* tokens/s" "$err" ||
  { echo "no summary line" >&2; cat "$err" >&2; exit 1; }
full=$(eval "${cmd/--policy fasa --budget 256/--policy full}" 2>/dev/null)
grep -q "Bingley" <<<"$full" || { echo "full attention's answer lacks Bingley: $full" >&2; exit 1; }
echo "README first command: $out"
