#pragma once

#include "capacity_plan.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

// The smallest deployments that serve a checkpoint (domain.md section 19): for each GPU kind, every GPU
// count × TP × PP × EP (off, or any divisor of TP) × DP-attention the engine's divisibility rules allow
// (planCapacity refuses the others), with or without the MTP layers, planned with the engine's own cache for that GPU, and the Pareto set kept: the fewest GPUs
// against the most sequences of the context.
struct SearchOptions
{
    PlanEngine engine = PlanEngine::Vllm;
    std::vector<const GpuPreset *> gpus; // empty: every preset
    std::uint64_t context = 0;           // tokens per sequence; 0: max_position_embeddings
    std::uint64_t sequences = 1;         // what "fits" means: at least this many sequences of the context
    int maxGpus = 64;
    bool mtp = false;                  // deployments that load the MTP layers (speculative decoding)
    bool mtpBoth = false;              // each GPU kind searched twice: without the MTP layers, then with them
    std::optional<CacheOptions> cache; // the flags' cache, when given; else each engine's own
    std::optional<double> memFraction;
    std::uint64_t reserve = 0;
    const std::atomic<bool> *cancel = nullptr; // set: the search stops early (its answer is then partial)
    std::uint64_t serial = 0; // the asker's number for this request, echoed in the answer's options
    // What placementTotals(data, false) and (data, true) gave, made ahead (the Plan view prepares both): used
    // when `totalsOf` is the checkpoint searched, made again otherwise. Not kept in the answer's options.
    std::shared_ptr<const PlacementTotals> totalsWithoutMtp, totalsWithMtp;
    std::shared_ptr<const LoadedCheckpoint> totalsOf; // held: no other checkpoint can take its address
};

struct SearchPoint
{
    int gpus = 0, tp = 1, ep = 0, pp = 1, dpAttention = 1;
    std::uint64_t sequences = 0;       // of the context, in the whole deployment
    std::uint64_t weightBytes = 0;     // per GPU of the binding stage
    std::uint64_t maxCachedTokens = 0; // per GPU of the binding stage
    std::string layout() const;        // "TP 8", "TP 4, PP 2, EP 8, DP attention 4"
};

struct GpuSearch
{
    const GpuPreset *gpu = nullptr;
    bool mtp = false;                  // these deployments load the MTP layers
    std::string cacheLayout;           // the cache planned with, in words
    std::vector<SearchPoint> pareto;   // by GPU count; each holds more sequences than any smaller one
    std::optional<SearchPoint> smallest; // the fewest GPUs with at least `sequences` sequences
};

struct DeploymentSearch
{
    SearchOptions options; // as resolved (context filled in)
    std::vector<GpuSearch> gpus;     // per GPU kind (twice with mtpBoth: without the MTP layers, then with)
    std::optional<std::size_t> best; // index into gpus of the kind whose smallest needs the fewest GPUs
    std::size_t plansTried = 0, plansRefused = 0;
};

DeploymentSearch searchDeployments(const LoadedCheckpoint &data, const SearchOptions &options);

} // namespace atlas
