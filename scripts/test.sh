#!/usr/bin/env bash
# Set up, build, and run the whole test suite through ctest; then the model and fetch tests again
# from a sanitizer build (ASan + UBSan).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
(cd build && ctest --output-on-failure -j2 --timeout 1500)

sanitized=(tst_safetensors tst_layouts tst_reader tst_routing tst_remote tst_untrusted tst_gguf)
echo "test: the model and fetch tests under ASan + UBSan (build-asan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DATLAS_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)" --target "${sanitized[@]}"
regex=$(IFS='|'; echo "^(${sanitized[*]})\$")
cd build-asan
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --output-on-failure -j2 --timeout 1500 -R "$regex"
