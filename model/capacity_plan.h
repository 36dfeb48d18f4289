#pragma once

#include "loaded_checkpoint.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// What it takes to serve a checkpoint (domain.md section 14): the weights each GPU holds by the engine's
// placement rules, the cache it keeps per token and per sequence, and the room that is left.

enum class PlanEngine { Vllm, Sglang };
std::string_view planEngineName(PlanEngine e); // "vllm", "sglang"

// GPU memory as the runtime sees it (torch's total, what the memory fraction multiplies).
struct GpuPreset
{
    std::string_view name;
    std::uint64_t bytes;
};
const std::vector<GpuPreset> &gpuPresets();
std::optional<std::uint64_t> gpuMemoryFromName(std::string_view name); // case-insensitive

struct PlanOptions
{
    int gpus = 1;
    std::optional<int> tp;  // default: gpus / pp
    int ep = 0;             // expert parallelism: 0 = off (routed experts split by TP)
    int dpAttention = 1;    // data-parallel attention groups inside TP
    int pp = 1;             // pipeline stages
    int redundantExperts = 0;
    bool mtp = false;       // the MTP layers' weights (speculative decoding) too
    std::string gpuName;    // as given ("H200"), for the report
    std::uint64_t gpuMemory = 0;
    double memFraction = 0.9;
    std::uint64_t reserve = 0;
    std::uint64_t context = 0; // tokens per sequence for sequences_at_context
    PlanEngine engine = PlanEngine::Vllm;
};

struct PlanPerGpu
{
    std::uint64_t weightBytes = 0;
    std::uint64_t replicatedBytes = 0;
    std::uint64_t splitBytes = 0;
    std::uint64_t expertBytes = 0; // routed experts (whole experts with EP, a TP share otherwise)
    std::uint64_t experts = 0;     // whole experts held with EP (0 without)
    double cacheBytesPerToken = 0;
    std::uint64_t stateBytesPerSequence = 0;
    std::uint64_t usableBytes = 0;
    std::int64_t cacheRoomBytes = 0; // usable - weights - reserve; negative: does not fit
    std::uint64_t maxCachedTokens = 0;
};

struct CapacityPlan
{
    PlanOptions options; // as resolved (tp filled in)
    PlanPerGpu perGpu;
    std::uint64_t sequencesAtContext = 0;
    bool fits = false;
    std::string reason;
    std::vector<std::string> notes; // what the engine changes at load, what was assumed
};

// The checkpoint's bytes by where the placement rules put them (one pass over every tensor; a plan is
// then arithmetic, so a view can re-plan as the user types).
struct PlacementTotals
{
    std::uint64_t replicated = 0, split = 0, splitAttention = 0, kvHeads = 0, routed = 0;
    std::uint64_t indexerWkFp8 = 0, indexerWkBf16 = 0; // an FP8 DSA indexer wk, and what vLLM makes of it
};
PlacementTotals placementTotals(const LoadedCheckpoint &data, bool mtp);

// Throws AtlasError(Usage) for an impossible combination (TP not dividing the heads or the vocabulary,
// EP not dividing experts + redundant, --dp-attention not dividing TP, ...), naming the reason.
CapacityPlan planCapacity(const LoadedCheckpoint &data, const PlanOptions &options,
                          const PlacementTotals *totals = nullptr); // totals: placementTotals(data, options.mtp)

} // namespace atlas
