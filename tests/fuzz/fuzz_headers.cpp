// libFuzzer target: safetensors header and index parsing must turn every input into either a
// result or an AtlasError: never a crash, a hang, an escaped exception or undefined behaviour.
#include "checkpoint_index.h"
#include "errors.h"
#include "gguf.h"
#include "safetensors.h"

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    const std::string_view bytes(reinterpret_cast<const char *>(data), size);
    // A GGUF header: parsed from every prefix length the reader could hold (here the whole input, and half
    // of it), as a file of the input's size; what is accepted lies inside the file and in sequence.
    if (bytes.starts_with("GGUF")) {
        for (const std::size_t have : {size, size / 2}) {
            try {
                const atlas::GgufParse p = atlas::parseGgufHeader("fuzz.gguf", bytes.substr(0, have), size);
                if (!p.header && p.wanted <= have && have < size) __builtin_trap(); // asks for more, never less
                if (p.header) {
                    std::uint64_t last = 0;
                    for (const auto &t : p.header->shard.tensors) {
                        if (t.begin < last || p.header->shard.dataStart() + t.end > size) __builtin_trap();
                        last = t.end;
                    }
                }
            } catch (const atlas::AtlasError &) {
            }
        }
        return 0;
    }
    // The first byte picks the parser, so one corpus serves both.
    if (!bytes.empty() && bytes.front() == 'I') {
        try {
            atlas::parseCheckpointIndex("fuzz.index.json", bytes.substr(1));
        } catch (const atlas::AtlasError &) {
        }
        return 0;
    }
    // Read by simdjson where the header allows it and by the project's own reader: the same answer, or
    // the same error, either way.
    std::string answers[2];
    for (int own = 0; own < 2; ++own) {
        try {
            const std::uint64_t n = atlas::parseHeaderLength("fuzz.safetensors", bytes.substr(0, 8), size);
            const auto header = atlas::parseShardHeader("fuzz.safetensors", bytes.substr(8, n), size, nullptr,
                                                        own ? 0 : atlas::kFastHeaderBytes);
            // Whatever is accepted must tile the data region exactly.
            std::uint64_t cursor = 0;
            for (const auto &t : header.tensors) {
                if (t.begin != cursor) __builtin_trap();
                cursor = t.end;
                answers[own] += std::string(t.name) + std::to_string(static_cast<int>(t.dtype)) + ":" +
                                std::to_string(t.begin) + "-" + std::to_string(t.end) + ";";
                for (auto d : t.shape)
                    answers[own] += std::to_string(d) + ",";
            }
            for (const auto &[k, v] : header.metadata)
                answers[own] += k + "=" + v + ";";
            if (cursor != size - 8 - n) __builtin_trap();
        } catch (const atlas::AtlasError &e) {
            answers[own] = std::string("error ") + e.what();
        }
    }
    if (answers[0] != answers[1]) __builtin_trap();
    return 0;
}
