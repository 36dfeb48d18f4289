#pragma once

#include "analysis.h"
#include "routing.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

// An e_score_correction_bias of any layer, under any router name.
bool isCorrectionBias(std::string_view tensorName);
// A router bias of the kind the checkpoint has: a correction bias, or a router linear bias (none: no).
bool isRoutingBias(std::string_view tensorName, BiasUse kind);
// The bias of a router's linear layer ("mlp.router.bias" in gpt-oss, "block_sparse_moe.gate.bias"):
// part of the logits, not a correction.
bool isRouterLinearBias(std::string_view tensorName);

// Exactly which bytes to read for the router correction biases (or any tensors named).
struct BiasFetchPlan
{
    struct Item
    {
        int layer = -1;
        std::string tensor;
        std::uint32_t shard = 0;
        Dtype dtype = Dtype::F32;
        std::vector<std::uint64_t> shape;
        std::uint64_t fileOffset = 0; // absolute, in the shard file
        std::uint64_t length = 0;
    };
    // One read: adjacent items of one shard joined, nothing between them.
    struct Range
    {
        std::uint32_t shard = 0;
        std::string file;
        std::uint64_t offset = 0;
        std::uint64_t length = 0;
        std::vector<std::size_t> items;
    };
    std::vector<Item> items; // by layer, then name
    std::vector<Range> ranges;
    std::uint64_t bytes = 0; // what the ranges read: exactly the tensors' bytes
};

// Why a hash-routed layer is not simulated.
inline constexpr const char *kHashRoutedReason =
    "hash-routed: gate.tid2eid chooses the experts by token id; the scores only weigh the chosen ones, so a "
    "rounded bias changes no choice";

// Slack above experts x 4 bytes that a bias tensor may hold (other dtypes, padding).
inline constexpr std::uint64_t kBiasSlackBytes = 4096;

// Every e_score_correction_bias (or, in a checkpoint without any, every router linear bias), plus
// the tensors named in `extra`.
// Throws AtlasError(Usage) when a named tensor does not exist, and AtlasError(Invalid) naming the
// tensor and the limit when one is larger than n_routed_experts (or 65,536) x 4 bytes + the slack.
BiasFetchPlan planBiasFetch(const Checkpoint &checkpoint, const std::vector<std::string> &extra = {});

// One bias tensor as read: raw little-endian bytes, and their SHA-256 (computed by the reader).
struct BiasTensor
{
    int layer = -1;
    std::string tensor;
    Dtype dtype = Dtype::F32;
    std::vector<std::uint64_t> shape;
    std::string raw;
    std::string sha256;
};

// FP32 values that collapse onto one BF16 level.
struct Bf16Level
{
    float value = 0;         // the BF16 level
    std::uint32_t count = 0; // how many of the tensor's values land on it
    std::uint32_t fp32Distinct = 0;
    float fp32Min = 0, fp32Max = 0;
};

struct BiasStats
{
    int layer = -1;
    std::string tensor;
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::string sha256;
    std::vector<float> values; // decoded
    std::uint32_t nanCount = 0, infCount = 0;
    std::optional<float> min, max; // over finite values
    std::uint32_t fp32Distinct = 0;
    std::uint32_t bf16Distinct = 0;
    std::vector<Bf16Level> levels;        // ascending
    std::optional<int> zeroLogitReplaced; // when the router config fits this tensor (lower-index ties)
    std::optional<int> zeroLogitMin, zeroLogitMax; // over every order of the BF16 ties
};

// The checkpoint-wide table of the reference article, over the router biases (not --bias-tensor extras).
struct BiasSummary
{
    std::uint64_t tensors = 0;
    int firstLayer = -1, lastLayer = -1;
    std::optional<std::uint64_t> valuesPerTensor; // when every tensor holds as many
    std::uint64_t bytesRead = 0;
    std::uint64_t bf16Bytes = 0; // what the same values take in BF16
    double medianFp32Distinct = 0, medianBf16Distinct = 0; // of an even count: the mean of the middle two
    std::uint32_t minBf16Distinct = 0, maxBf16Distinct = 0;
    std::uint64_t layersLosingLevels = 0;      // fewer distinct values in BF16 than in FP32
    std::uint64_t layersChangedAtZeroLogits = 0; // zero-logit probe > 0 (lower-index ties)
    std::uint64_t layersChangedAtZeroLogitsMin = 0, layersChangedAtZeroLogitsMax = 0; // over tie orders
};
BiasSummary summarizeBiases(const std::vector<BiasStats> &stats, BiasUse kind);

// Decodes F32, BF16 or F16 little-endian bytes. Throws AtlasError(Invalid) for other dtypes.
std::vector<float> decodeValues(const BiasTensor &tensor);

BiasStats analyzeBias(const BiasTensor &tensor, const std::optional<RouterConfig> &router);

// The router configuration from config.json for `experts` experts and a bias used as `bias`.
// Without scoring_func: the gpt_oss router is softmax after top-K, a router with a correction bias
// or topk_method noaux_tc is sigmoid, any other softmax (the transformers MoE default); the choice
// and its reason are in scoringFrom. nullopt (with the reason) when top-k is unknown, the settings do
// not fit, or the router function is one the simulator does not know.
std::optional<RouterConfig> routerConfigFor(const ModelConfig &config, std::size_t experts,
                                            BiasUse bias = BiasUse::Correction, std::string *why = nullptr);

} // namespace atlas
