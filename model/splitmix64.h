#pragma once

#include <cstdint>

namespace atlas {

// SplitMix64: a tiny, portable generator. The synthetic biases and logits use it so that the
// same seed gives the same numbers on every machine.
inline std::uint64_t splitmix64(std::uint64_t &state)
{
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

} // namespace atlas
