#pragma once

#include "loaded_checkpoint.h"

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

// Two checkpoints compared header against header (domain.md section 11).

enum class TensorChange { Added, Removed, Dtype, Shape };
std::string_view tensorChangeName(TensorChange c); // "added", "removed", "dtype", "shape"

// Changed tensors that share a name pattern and the same change: layer and expert numbers collapse
// into ranges ("model.layers.{3..77}.mlp.experts.{0..255}.down_proj.weight").
struct TensorGroup
{
    std::string pattern;
    TensorChange change = TensorChange::Added;
    std::string a, b; // dtype (and shape) before and after; empty where the tensor is absent
    std::uint64_t tensors = 0;
};

struct BiasComparison
{
    // One checkpoint's side of a bias tensor.
    struct Side
    {
        bool present = false;
        std::string dtype;
        std::uint32_t bf16Distinct = 0;
        std::string sha256;
    };
    int layer = -1;
    std::string tensor;
    Side a, b;
    bool sameBytes = false;
};

struct CheckpointDiff
{
    SourceInfo a, b;
    // config.json, top-level keys (nested objects compared whole)
    nlohmann::ordered_json configAdded = nlohmann::ordered_json::object();
    nlohmann::ordered_json configRemoved = nlohmann::ordered_json::object();
    nlohmann::ordered_json configChanged = nlohmann::ordered_json::object(); // key -> {a, b}
    // Tensor names partitioned: only in A or B, in both with another dtype, same dtype another shape, same.
    std::uint64_t same = 0, added = 0, removed = 0, dtypeChanged = 0, shapeChanged = 0;
    std::vector<TensorGroup> groups;
    // Logical parameters, bytes and formats by category.
    std::uint64_t aParameters = 0, bParameters = 0;
    std::array<std::uint64_t, kCategoryCount> aByCategory{}, bByCategory{};
    std::array<std::uint64_t, kCategoryCount> aBytes{}, bBytes{};
    std::array<std::string, kCategoryCount> aFormat{}, bFormat{};
    std::optional<std::uint64_t> aActive, bActive;
    std::vector<int> aFull, bFull; // indexer layers
    std::uint64_t aCacheBytesPerToken = 0, bCacheBytesPerToken = 0;
    bool biasesCompared = false;
    std::vector<BiasComparison> biases;
    // Safetensors against GGUF (a checkpoint and a quantised copy of it): tensors are matched through the
    // converter's naming (gguf_names.h), the experts stacked and kv_b split; block scales are folded into
    // the GGUF blocks (counted apart, never "removed"); config keys compared only where both sides have one.
    bool acrossFormats = false;
    std::uint64_t scalesFolded = 0; // the safetensors side's scale tensors
    // Bits per weight by category, each side's (0: none); and what one side holds that the other lacks, by
    // category and layer ("mtp: layer 61 (28 tensors)"), with the side that lacks it.
    std::array<double, kCategoryCount> aBitsPerWeight{}, bBitsPerWeight{};
    struct Absent
    {
        Category category = Category::Other;
        char missingFrom = 'b'; // 'a' or 'b'
        std::vector<int> layers; // -1: outside the layers
        std::uint64_t tensors = 0;
        std::uint64_t parameters = 0;
    };
    std::vector<Absent> absent;

    bool tensorsIdentical() const { return added == 0 && removed == 0 && dtypeChanged == 0 && shapeChanged == 0; }
    bool parametersAgree() const { return aParameters == bParameters; }
    // The bytes each side stores, over every category.
    std::uint64_t aStoredBytes() const { return std::accumulate(aBytes.begin(), aBytes.end(), std::uint64_t(0)); }
    std::uint64_t bStoredBytes() const { return std::accumulate(bBytes.begin(), bBytes.end(), std::uint64_t(0)); }
};

// `biasesA` / `biasesB`: the audits when the biases were read (then compared byte for byte).
// Throws AtlasError("cancelled") soon after `cancel` is raised (checked per shard).
CheckpointDiff diffCheckpoints(const LoadedCheckpoint &a, const LoadedCheckpoint &b, const BiasAudit *biasesA = nullptr,
                               const BiasAudit *biasesB = nullptr, const std::atomic<bool> *cancel = nullptr);

// An F32 tensor (or a "F32 [shape]" description) that became BF16 or F16: precision lost.
bool precisionLost(std::string_view before, std::string_view after);

// The router biases of two audits, tensor by tensor: same bytes or not, dtypes, BF16 level counts.
// byLayer: pair them by layer (a safetensors checkpoint against a GGUF copy, whose names differ).
std::vector<BiasComparison> compareBiases(const BiasAudit &a, const BiasAudit &b, bool byLayer = false);

// config.json's changes key by key: nested objects compared key by key, their keys as paths
// ("quantization_config.quant_method"), an object only one side has key by key too; arrays and scalars
// whole. kind: "added", "removed", "changed".
struct ConfigChange
{
    std::string path, kind;
    nlohmann::ordered_json a, b; // null on the side that lacks the key
};
std::vector<ConfigChange> configChangesByPath(const CheckpointDiff &diff);

// What a reader wants first, one sentence per kind of change: the stored bytes before the parameters
// when only the packing changed ("Stored size 703.72 GiB → 415.19 GiB (−41.0 %) for the same
// 753.86 B parameters"), formats by category, config, indexers, cache per token.
std::vector<std::string> diffLeadSentences(const CheckpointDiff &diff);

// "Absent in B: mtp of layer 61 (24 tensors, 11.52 B parameters)."
std::string absentSentence(const CheckpointDiff::Absent &row);

// The ckpt-atlas.diff/1 JSON.
nlohmann::ordered_json diffJson(const CheckpointDiff &diff);
// One sentence: "config: 1 key added (moe_router_dtype: "float32"), 1 changed; tensors identical; …".
std::string diffSummary(const CheckpointDiff &diff);
// The readable report of `ckpt-atlas diff`.
std::string formatDiff(const CheckpointDiff &diff);

// "model.layers.{3..77}.mlp.experts.{0..255}.w1.weight" from the numbers seen at each numeric place
// (a helper of the grouping, public for its tests): {0,1,2,5} -> "{0..2,5}", one value -> "7".
std::string collapseNumbers(const std::vector<std::uint64_t> &sortedUnique);

} // namespace atlas
