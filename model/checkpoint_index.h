#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace atlas {

// model.safetensors.index.json: which shard holds which tensor.
struct CheckpointIndex
{
    std::vector<std::string> shardFiles;                      // distinct, in natural order
    std::unordered_map<std::string, std::uint32_t> weightMap; // tensor -> index into shardFiles
    std::optional<std::uint64_t> totalSize;                   // metadata.total_size, when given
};

CheckpointIndex parseCheckpointIndex(std::string_view file, std::string_view json);

// A shard name must be a plain file in the same directory: no separators, no '..',
// no absolute paths, no percent-encoding, no control characters.
bool isSafeShardName(std::string_view name);

// "a2" < "a10": digits compare by value, so layer 10 follows layer 9.
bool naturalLess(std::string_view a, std::string_view b);

} // namespace atlas
