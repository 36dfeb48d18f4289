#!/usr/bin/env bash
# Builds the libFuzzer target with clang in its own build tree and runs it for SECONDS.
# Usage: tests/fuzz/run-fuzz.sh BUILD_DIR [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$1
seconds=${2:-60}
CXX=clang++ cmake -S "$src" -B "$build" -DATLAS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_headers -j"$(nproc)" >/dev/null
corpus="$build/corpus"
mkdir -p "$corpus"
cp -n "$here"/seeds/* "$corpus"/ 2>/dev/null || true
cd "$build"
./tests/fuzz/fuzz_headers -max_total_time="$seconds" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 "$corpus" 2>&1 | tail -n 25
