#pragma once

#include "loaded_checkpoint.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace atlas {

// What it takes to serve a checkpoint (domain.md section 14): the weights each GPU holds by the engine's
// placement rules, the cache it keeps per token and per sequence, and the room that is left.

enum class PlanEngine { Vllm, Sglang };
std::string_view planEngineName(PlanEngine e); // "vllm", "sglang"

// GPU memory as the runtime sees it (torch's total, what the memory fraction multiplies) where a source
// gives it, else the vendor's figure, named as such (domain.md section 19).
struct GpuPreset
{
    std::string_view name;
    std::uint64_t bytes;
    bool runtime;              // true: torch's total as a runtime reported it; false: the vendor's figure
    std::string_view source;   // where the figure comes from
    int cudaMajor = 0;         // CUDA compute capability's major (Blackwell 10 and 12, Hopper 9); 0 for AMD
};
const std::vector<GpuPreset> &gpuPresets();
// Case-insensitive, spaces, dashes and underscores ignored ("rtx-pro-6000" is "RTX PRO 6000").
const GpuPreset *gpuPresetNamed(std::string_view name);
std::optional<std::uint64_t> gpuMemoryFromName(std::string_view name);

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
    std::optional<double> memFraction; // default: vLLM's 0.9, SGLang's own heuristic (sglangMemFraction)
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
    double windowBytesPerSequence = 0; // one sequence's full sliding windows on this GPU
    double bytesPerSequence = 0;       // one sequence at the context on this GPU (rows, windows, state)
};

// One pipeline stage: its decoder layers [firstLayer, endLayer) (vLLM's get_pp_indices), the embedding
// on the first, the head and the MTP layers on the last, and what one of its GPUs holds.
struct PlanStage
{
    int firstLayer = 0, endLayer = 0;
    bool embedding = false, head = false, mtp = false;
    PlanPerGpu perGpu;
    std::uint64_t sequencesAtContext = 0; // sequences of --context the stage's GPUs hold (x DP attention)
};

struct CapacityPlan
{
    PlanOptions options; // as resolved (tp filled in)
    PlanPerGpu perGpu;   // the binding stage's GPU (the only one without pipeline parallelism)
    std::vector<PlanStage> stages;
    int bindingStage = 0; // the stage with the least room (or the fewest sequences)
    std::uint64_t sequencesAtContext = 0;
    bool fits = false;
    std::uint64_t hostBytes = 0; // host-resident tables (Engram, n-gram embeddings), in host memory
    std::string reason;
    std::vector<std::string> notes; // what the engine changes at load, what was assumed
};

// The checkpoint's bytes by where the placement rules put them (one pass over every tensor; a plan is
// then arithmetic, so a view can re-plan as the user types).
struct PlacementBucket
{
    std::uint64_t replicated = 0, split = 0, splitAttention = 0, kvHeads = 0, routed = 0;
    std::uint64_t embedding = 0; // the input embedding: split by TP, whole under SGLang's DP attention
    // DeepSeek-V4's attention sinks: per tensor max(heads / TP, 64) FP32 values on each rank.
    std::uint64_t paddedSinks = 0, paddedSinkHeads = 0;
    std::uint64_t host = 0; // host-resident tables: in host memory, on no GPU
    PlacementBucket &operator+=(const PlacementBucket &o);
};
struct PlacementTotals
{
    PlacementBucket first;               // outside the layers, on the first stage: embedding, encoder towers
    PlacementBucket last;                // outside the layers, on the last stage: final norm, head
    std::vector<PlacementBucket> layers; // per layer, main then MTP (MTP layers go to the last stage)
    std::uint64_t indexerWkFp8 = 0, indexerWkBf16 = 0; // an FP8 DSA indexer wk, and what vLLM makes of it
    std::uint64_t kvBProjFp8 = 0, kvBProjBf16 = 0;     // an FP8 kv_b_proj, and its BF16 size (SGLang's w_kc/w_vc)
    PlacementBucket sum() const;
};

// The split of L decoder layers into pp stages, [first, end) per stage: L / pp each and the remainder
// one apiece to the stages before the last, counting back from it (vLLM's distributed/utils.py
// get_pp_indices), or to the last stages (SGLang's get_pp_indices).
std::vector<std::pair<int, int>> pipelineStages(int layers, int pp, PlanEngine engine = PlanEngine::Vllm);

// SGLang's default mem_fraction_static when none is given (srt/arg_groups/memory_hook.py,
// handle_gpu_memory_settings): (memory - reserved) / memory in MiB rounded to 3 decimals, reserved =
// 512 + 1.5 x max(chunked_prefill_size, 2048) + TP x PP / 8 x 1024 + 2 x decode graph max_bs (+ DP
// attention padding), at least 10 GiB on GPUs above 60 GiB; chunked prefill and max_bs by GPU memory.
double sglangMemFraction(std::uint64_t gpuMemory, int tp, int pp, int dpAttention);
PlacementTotals placementTotals(const LoadedCheckpoint &data, bool mtp);
// placementTotals(data, false) and (data, true) in one pass over the tensors.
std::pair<PlacementTotals, PlacementTotals> placementTotalsBoth(const LoadedCheckpoint &data);

// The cache an engine allocates for a checkpoint when no cache flag says otherwise (domain.md section 19):
// its rows and index entries (with the MTP layer's when `mtp` loads it for speculative decoding), its KV
// dtype ("auto": the model's BF16) and its state dtype (unset: FP32, or the config's mamba_ssm_cache_dtype).
// The context stays as given.
// `gpu` (may be null: memory given in bytes) decides SGLang's KV dtype on DSA models; `data` the state dtype.
CacheOptions engineCacheOptions(PlanEngine engine, bool mtp, const GpuPreset *gpu, const LoadedCheckpoint &data,
                                const CacheOptions &given);
// What a budget counts, in words a user knows: "vLLM's cache: BF16 latent, 132-byte FP8 index keys on the
// 21 layers that own an indexer". `engine` unset: the flags the user gave.
std::string cacheLayoutWords(const CacheBudget &c, std::optional<PlanEngine> engine,
                             std::string_view given = "as the cache flags set it: ");

// Throws AtlasError(Usage) for an impossible combination (TP not dividing the heads or the vocabulary,
// EP not dividing experts + redundant, --dp-attention not dividing TP, ...), naming the reason.
// totals: placementTotals(data, options.mtp); cache: the budget to plan with (data.cache by default, or
// the one a view's settings made).
CapacityPlan planCapacity(const LoadedCheckpoint &data, const PlanOptions &options,
                          const PlacementTotals *totals = nullptr, const CacheBudget *cache = nullptr);

} // namespace atlas
