#!/usr/bin/env bash
# Regenerates the README's pictures from the build: three views of the embedded demo (the synthetic GLM-5.x
# layout), written by `ckpt-atlas figures --document` (laid out for a 16 cm column, at one PNG pixel per
# window pixel to keep them small) and copied to docs/img/. Run after scripts/test.sh has built build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/app/ckpt-atlas
[ -x "$bin" ] || { echo "readme-figures: build first (scripts/test.sh)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
QT_QPA_PLATFORM=offscreen "$bin" figures --out "$out" --document --scale 1 >/dev/null 2>&1
mkdir -p docs/img
for view in 01-overview 02-anatomy 06-cache; do
    cp "$out/$view.png" "docs/img/$view.png"
done
ls -l docs/img
