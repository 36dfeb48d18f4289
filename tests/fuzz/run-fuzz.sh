#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build tree and runs each for SECONDS.
# Usage: tests/fuzz/run-fuzz.sh BUILD_DIR [SECONDS] [TARGET...]   (default: fuzz_headers fuzz_checkpoint)
# Fails loudly when clang++ is missing: a fuzz test that vanishes proves nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
seconds=${2:-60}
shift $(( $# >= 2 ? 2 : $# ))
targets=("$@")
((${#targets[@]})) || targets=(fuzz_headers fuzz_checkpoint)
if ! command -v clang++ >/dev/null; then
    echo "run-fuzz: clang++ is not installed; scripts/setup.sh installs it (package clang)" >&2
    exit 1
fi
CXX=clang++ cmake -S "$src" -B "$build" -DATLAS_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)" >/dev/null
for target in "${targets[@]}"; do
    corpus="$build/corpus-$target"
    mkdir -p "$corpus"
    # Seeds, and every input that once found a failure, stay in the corpus as regressions.
    case "$target" in
        fuzz_headers) seeds="$here/seeds" ;;
        fuzz_checkpoint) seeds="$here/seeds-checkpoint" ;;
    esac
    cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
    echo "== $target, $seconds s"
    log="$build/$target.log"
    if ! (cd "$build" && ./tests/fuzz/"$target" -max_total_time="$seconds" -max_len=8192 -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 "$corpus" >"$log" 2>&1); then
        tail -n 60 "$log"
        echo "run-fuzz: $target found a failure (log: $log)" >&2
        exit 1
    fi
    tail -n 12 "$log"
done
