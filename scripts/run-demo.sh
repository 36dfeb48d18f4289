#!/usr/bin/env bash
# Set up, build, and open Checkpoint Atlas on its embedded synthetic demo.
# Without a display (a headless server), it writes every view as PNG and SVG instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
    echo "run-demo: no display here; writing every view of the demo to build/demo-figures instead"
    exec build/app/ckpt-atlas figures --out build/demo-figures "$@"
fi
exec build/app/ckpt-atlas "$@"
