#pragma once

#include "dtype.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// The largest header the reference implementation accepts.
inline constexpr std::uint64_t kMaxHeaderLength = 100'000'000;
// No file a source reports may be larger: 1 PiB is over a thousand times the largest checkpoint
// shard seen, and keeps every sum of offsets and sizes far from 64-bit overflow.
inline constexpr std::uint64_t kMaxFileSize = 1ull << 50;
// All shards of one checkpoint together: with at most 8 logical elements per stored byte (1-bit
// packing), every byte and parameter total then stays below 2^63.
inline constexpr std::uint64_t kMaxCheckpointBytes = 1ull << 59;

struct TensorInfo
{
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0; // relative to the end of the header
    std::uint64_t end = 0;
    std::uint64_t numel = 0;
    std::uint32_t shard = 0; // index into Checkpoint::shards

    std::uint64_t bytes() const { return end - begin; }
};

struct ShardHeader
{
    std::string file;
    std::uint64_t headerLength = 0; // N
    std::uint64_t fileSize = 0;
    std::vector<TensorInfo> tensors; // in data order
    std::map<std::string, std::string> metadata;

    std::uint64_t dataStart() const { return 8 + headerLength; }
};

// Reads N from the first 8 bytes and checks it against the limit and the file size.
std::uint64_t parseHeaderLength(std::string_view file, std::string_view first8, std::uint64_t fileSize);

// Parses and validates the JSON header (exactly N bytes) of a file of fileSize bytes.
// Throws AtlasError(Invalid) naming the file, the tensor and the rule broken.
ShardHeader parseShardHeader(std::string_view file, std::string_view json, std::uint64_t fileSize);

// numel x bits / 8, or throws on overflow / sub-byte misalignment.
std::uint64_t tensorByteSize(std::string_view file, const std::string &tensor, Dtype dtype,
                             const std::vector<std::uint64_t> &shape, std::uint64_t *numelOut = nullptr);

bool isValidUtf8(std::string_view text);

} // namespace atlas
