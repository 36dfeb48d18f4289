// libFuzzer target: safetensors header and index parsing must turn every input into either a
// result or an AtlasError: never a crash, a hang, an escaped exception or undefined behaviour.
#include "checkpoint_index.h"
#include "errors.h"
#include "safetensors.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    // The first byte picks the parser, so one corpus serves both.
    if (!bytes.empty() && bytes.front() == 'I') {
        try {
            atlas::parseCheckpointIndex("fuzz.index.json", bytes.substr(1));
        } catch (const atlas::AtlasError &) {
        }
        return 0;
    }
    try {
        const std::uint64_t n = atlas::parseHeaderLength("fuzz.safetensors", bytes.substr(0, 8), size);
        const auto header = atlas::parseShardHeader("fuzz.safetensors", bytes.substr(8, n), size);
        // Whatever is accepted must tile the data region exactly.
        std::uint64_t cursor = 0;
        for (const auto &t : header.tensors) {
            if (t.begin != cursor) __builtin_trap();
            cursor = t.end;
        }
        if (cursor != size - 8 - n) __builtin_trap();
    } catch (const atlas::AtlasError &) {
    }
    return 0;
}
