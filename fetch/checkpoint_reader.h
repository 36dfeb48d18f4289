#pragma once

#include "byte_source.h"
#include "checkpoint.h"
#include "header_cache.h"

#include <functional>
#include <span>
#include <string_view>

namespace atlas {

struct LoadProgress
{
    std::size_t filesDone = 0;
    std::size_t filesTotal = 0;
    std::uint64_t bytes = 0;
    std::uint64_t requests = 0;
};

// Which GGUF files of a source to read (domain.md section 20): a file named in the source (a path or URL that
// ends in .gguf: it and the other parts of its split), or those whose path contains `pattern` (--gguf), or,
// with neither, the source's only GGUF set when it holds no safetensors checkpoint.
struct GgufSelection
{
    std::string file;
    std::string pattern;
    bool requested() const { return !file.empty() || !pattern.empty(); }
};

struct ReadOptions
{
    GgufSelection gguf;
    unsigned parseThreads = 0;                          // 0: one per core
    std::function<void(const LoadProgress &)> progress; // called from worker threads, serialised
    HeaderCache *cache = nullptr;                       // headers kept per commit, when given
    // Shard headers of one checkpoint in all: 2 GiB is twenty times the largest single header the
    // format allows and ~190 times what the 141-shard GLM-5.x checkpoint needs (11 MB).
    std::uint64_t headerBudget = 2ull << 30;
};

// Reads config.json, the index and every shard header through `source`, validating each.
// Throws AtlasError: Source when a file cannot be read, Invalid when its bytes are not a checkpoint.
Checkpoint readCheckpoint(ByteSource &source, const ReadOptions &options = {});

// An upper-bound guess of a shard's header size from the tensor names the index assigns it,
// so that one ranged read usually fetches the whole header.
std::uint64_t estimateHeaderBytes(std::span<const std::string_view> tensorNames);

} // namespace atlas
