#!/usr/bin/env bash
# Writes the six public-domain Jane Austen novels the tests, examples and results use into
# $FASA_HOME/texts (default ~/.cache/fasa/texts), from Debian's r-cran-janeaustenr (1.0.0-1,
# the Project Gutenberg texts), and checks each file against its pinned sha256.
#   bash scripts/get_texts.sh          # installs r-base-core + r-cran-janeaustenr if missing
# A verified file is not written again. Any mismatch is an error: the goldens depend on the bytes.
set -euo pipefail

dir="${FASA_HOME:-$HOME/.cache/fasa}/texts"

# file name | R object in janeaustenr | sha256
TEXTS=(
  "austen_emma.txt emma 7c67b5985c6d0de1efaeb5d342d52cb82c38083c40e2295129e30e87ee690ebe"
  "austen_persuasion.txt persuasion 8061549557aebd2fd6e353d18d9197cb707029112bd52d4d8b174583a925848a"
  "austen_mansfield_park.txt mansfieldpark 98bc90519cdf4ef663ad7de2734bb529435ef24f7abbde6bb1a50898871dafe9"
  "austen_northanger_abbey.txt northangerabbey 51f91bbe0517db8e65cff009b097ce0a1836124c4e0532ac19e6c0cad982abed"
  "austen_pride_and_prejudice.txt prideprejudice dfc684d4f857fa938268f9ab9c5567b64bd0691251eca959644adeabe6287a4d"
  "austen_sense_and_sensibility.txt sensesensibility 105e1651fe93bed7130078578efd31e0c557d68667ba672ddc876f735b30fe09"
)

verified() {  # FILE SHA256
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

todo=()
for entry in "${TEXTS[@]}"; do
  read -r file object sha <<<"$entry"
  verified "$dir/$file" "$sha" || todo+=("$entry")
done
if [ ${#todo[@]} -eq 0 ]; then
  echo "texts: all six verified in $dir" >&2
  exit 0
fi

if ! Rscript -e 'invisible(packageVersion("janeaustenr"))' >/dev/null 2>&1; then
  echo "texts: installing r-base-core r-cran-janeaustenr (Debian)" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    r-base-core r-cran-janeaustenr >/dev/null
fi

mkdir -p "$dir"
for entry in "${todo[@]}"; do
  read -r file object sha <<<"$entry"
  tmp="$dir/.$file.tmp.$$"
  # writeLines ends every line (the last included) with "\n": the bytes the hashes pin.
  Rscript -e "writeLines(getExportedValue('janeaustenr', '$object'), commandArgs(TRUE)[1])" "$tmp"
  got="$(sha256sum "$tmp" | cut -d' ' -f1)"
  if [ "$got" != "$sha" ]; then
    rm -f "$tmp"
    echo "texts: error: janeaustenr::$object has sha256 $got, expected $sha" >&2
    exit 1
  fi
  mv -f "$tmp" "$dir/$file"
  echo "texts: wrote $dir/$file" >&2
done
