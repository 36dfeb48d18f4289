#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace atlas {

// model.safetensors.index.json: which shard holds which tensor. The names live in one arena and
// are listed sorted by (shard, name): a shard's tensors are one range, which the reader hands to the
// shard's header as it lies, and checks against it by a merge, not through a hash map of 118k strings.
struct CheckpointIndex
{
    // Every tensor name, back to back (shard headers share it). Only the bytes `listed` views are
    // meaningful: a large index is read in two halves, each writing its names into its own part.
    struct NameArena
    {
        std::unique_ptr<char[]> bytes; // not initialised: pages never written are never resident
        std::size_t size = 0;
    };
    std::vector<std::string> shardFiles;    // distinct, in natural order
    std::shared_ptr<const NameArena> names;
    std::vector<std::string_view> listed;   // views into names, sorted by shard, then name; no name twice
    std::vector<std::size_t> shardStart;    // shard s lists [shardStart[s], shardStart[s + 1])
    std::optional<std::uint64_t> totalSize; // metadata.total_size, when given
    std::vector<std::string> warnings;      // what was read as Python's json would read it, and said so
    std::vector<std::uint32_t> byName;      // positions in listed, in name order (for shardOf)

    std::size_t size() const { return listed.size(); }
    // The names shard s lists, sorted.
    std::span<const std::string_view> shardNames(std::size_t s) const
    {
        return std::span<const std::string_view>(listed).subspan(shardStart[s], shardStart[s + 1] - shardStart[s]);
    }
    // The shard that lists `tensor`, if any (a binary search over a name-sorted view).
    std::optional<std::uint32_t> shardOf(std::string_view tensor) const;
};

// An index of `splitFrom` bytes or more is read in two halves on two threads (the result is the same).
// Below it, one thread: reading the 11 MB of the 141-shard GLM-5.x index is bound by the page faults of
// its new arrays, which a second thread does not share out (measured: no faster, 20 ms more CPU); Kimi-K3's
// 57 MB index takes 52 ms on one thread and 37 on two.
constexpr std::size_t kSplitIndexBytes = 32u << 20;

// Throws AtlasError("cancelled") soon after `cancel` is raised (checked every 4,096 entries).
CheckpointIndex parseCheckpointIndex(std::string_view file, std::string_view json,
                                     const std::atomic<bool> *cancel = nullptr,
                                     std::size_t splitFrom = kSplitIndexBytes);

// A shard name must be a plain file in the same directory: no separators, no '..',
// no absolute paths, no percent-encoding, no control characters.
bool isSafeShardName(std::string_view name);

// "a2" < "a10": digits compare by value, so layer 10 follows layer 9.
bool naturalLess(std::string_view a, std::string_view b);

} // namespace atlas
