#!/usr/bin/env bash
# Writes the README's first example prompt, the opening chapters of Pride and Prejudice (about
# 1,500 words, some 2,100 tokens) and a question about their first page, to
# $FASA_HOME/demo_prompt.txt (default ~/.cache/fasa), and prints that path. The text comes from
# scripts/get_texts.sh (run by scripts/setup.sh).
#   ./build/fasa run -m smollm2-135m --chat -f "$(bash scripts/demo_prompt.sh)" --policy fasa ...
set -euo pipefail
home="${FASA_HOME:-$HOME/.cache/fasa}"
text="$home/texts/austen_pride_and_prejudice.txt"
[ -f "$text" ] || { echo "demo_prompt: $text is missing: run bash scripts/setup.sh" >&2; exit 1; }
out="$home/demo_prompt.txt"
{
  echo "Read this story and answer the question after it."
  echo
  # From "Chapter 1" on, the first 1,500 words, line breaks kept.
  awk -v max=1500 '/^Chapter 1$/ { on = 1 } on { n += NF; print; if (n >= max) exit }' "$text"
  echo
  echo "Question: What is the name of the young man who has taken Netherfield Park?"
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
