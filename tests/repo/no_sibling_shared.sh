#!/usr/bin/env bash
# Fails when a file of the project names the team's sibling `shared` directory (`../shared/...`,
# `/work/shared/...`): a user's clone has none, so nothing may read from or point at it. Texts
# come from scripts/get_texts.sh ($FASA_HOME/texts), models from `fasa pull`.
# Not searched: this script (it holds the pattern).
#   no_sibling_shared.sh REPO_ROOT
set -euo pipefail
root="${1:-$(dirname "$0")/../..}"
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else
  mapfile -t files < <(find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||')
fi
self="tests/repo/no_sibling_shared.sh"
hits=""
for f in "${files[@]}"; do
  [ "$f" = "$self" ] && continue
  [ -f "$f" ] || continue
  h="$(grep -nIE '\.\./shared(/|\b)|/work/shared\b' "$f" 2>/dev/null || true)"
  [ -n "$h" ] && hits+="$(sed "s|^|$f:|" <<<"$h")"$'\n'
done
if [ -n "$hits" ]; then
  printf '%s' "$hits" >&2
  echo "error: the files above name the sibling shared directory (use \$FASA_HOME/texts or the repository's own files)" >&2
  exit 1
fi
echo "no file names the sibling shared directory (${#files[@]} files searched)"
