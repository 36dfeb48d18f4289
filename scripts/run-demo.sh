#!/usr/bin/env bash
# Set up, build, and open Checkpoint Atlas on its embedded synthetic demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
exec build/app/ckpt-atlas "$@"
