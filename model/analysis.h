#pragma once

#include "checkpoint.h"
#include "layer_kinds.h"

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace atlas {

// Parameter categories of domain.md section 5, in report order.
enum class Category {
    RoutedExperts,
    SharedExperts,
    Attention,
    Indexer,
    Router,
    DenseMlp,
    Embedding,
    Norms,
    Mtp,
    LinearAttention,  // KDA, Gated DeltaNet, Mamba-2 mixers
    Encoders,         // vision and audio towers and projectors: in the total, not active per text token
    HyperConnections, // multi-stream residual mixing (hc_*), attention residuals
    RouterTables,     // lookup tables such as tid2eid: neither parameters nor scales, counted apart
    HostTables,       // n-gram tables kept in host memory (Engram, n-gram embeddings): in the total, active
                      // only for the rows a token reads, placed in host memory by the plan
    Other,            // no role: listed in parameters.unassigned, never dropped
};
inline constexpr std::size_t kCategoryCount = 15;
std::string_view categoryName(Category c);

enum class LayerKind { Dense, Moe, Mtp };
std::string_view layerKindName(LayerKind k);

enum class IndexerRole { None, Full, Shared };
std::string_view indexerRoleName(IndexerRole r);

// "model.layers.12.mlp.experts.3.up_proj.weight" -> 12 and "mlp.experts.3.up_proj.weight".
struct TensorPlace
{
    int layer = -1;
    std::string_view rest; // name inside the layer (or the whole name outside layers)
};
TensorPlace placeOf(std::string_view name);

// Quantization scales are not parameters (domain.md section 5).
bool isQuantScale(std::string_view name, Dtype dtype);

Category categorize(std::string_view name, int layer, bool mtpLayer);

// What a tensor inside a layer is, by the module names every family uses: "mlp.experts.3.w1.weight",
// "block_sparse_moe.experts.3.w1.weight" and a fused "mlp.experts.gate_up_proj_blocks" are all routed
// experts; "mlp.gate.weight", "block_sparse_moe.gate.weight" and "mlp.router.weight" are routers.
struct LayerRole
{
    Category category = Category::Other;
    int expert = -1;           // a per-expert tensor's expert number
    bool fusedExperts = false; // one tensor for all experts, the expert count its leading dimension
};
LayerRole layerRole(std::string_view rest);

struct Tally
{
    std::uint64_t tensors = 0;
    std::uint64_t elements = 0;
    std::uint64_t bytes = 0;
    void add(const TensorInfo &t) { add(t, t.numel); }
    void add(const TensorInfo &t, std::uint64_t logicalElements)
    {
        ++tensors;
        elements += logicalElements;
        bytes += t.bytes();
    }
    void add(const Tally &other) // another count of other tensors
    {
        tensors += other.tensors;
        elements += other.elements;
        bytes += other.bytes;
    }
};

struct LayerInfo
{
    int index = 0;
    LayerKind kind = LayerKind::Dense;
    IndexerRole indexer = IndexerRole::None;
    bool indexerWeights = false; // self_attn.indexer.* present on disk
    int reusesLayer = -1;        // for a shared layer: the full layer whose selection it reuses
    int routedExperts = 0;       // distinct expert indices on disk
    bool hashRouted = false;     // experts chosen by token id (DeepSeek-V4 hash_moe, gate.tid2eid)
    std::int64_t compressRatio = -1; // DeepSeek-V4: tokens per compressed row (0: window only); -1: not such a layer
    std::string attention;       // layer_types' word for the layer, else "attention", "linear_attention" or "none"
    // How the layer mixes its tokens, decided once from the schedule and the tensors together
    // (decideMixers in analysis.cpp); every view and formula asks this, never a name or a word again.
    MixerKind mixer = MixerKind::Full;
    bool attentionOnDisk = false; // any attention or recurrent-mixer tensor of the layer is on disk
    Tally params;                // scales excluded
    Tally scales;
    Tally tables; // hash routing's token→expert tables (tid2eid): neither parameters nor scales
    bool onDisk() const { return params.tensors + scales.tensors + tables.tensors > 0; }
};

struct ParameterBudget
{
    std::uint64_t total = 0;
    std::optional<std::uint64_t> activatedPerToken;
    std::array<std::uint64_t, kCategoryCount> byCategory{};
    std::array<std::uint64_t, kCategoryCount> activeByCategory{};
    std::map<std::string, std::uint64_t> byDtype; // scales excluded
    Tally quantScales;
    Tally routerTables;                    // tid2eid and the like: not in the total
    std::vector<std::string> otherTensors; // never dropped silently (parameters.unassigned)
    std::string activationNote;            // how the active count was formed, or why it is missing
};

// The quantization layout: for each category, elements per dtype, and scale tensors apart.
struct QuantRow
{
    Category category;
    std::map<std::string, Tally> dtypes;
    Tally scales;
    std::map<std::string, std::uint64_t> scaleDtypes;
    std::string format; // "FP8 e4m3 128x128", "NVFP4 g16", "MXFP4 + BF16", ...: largest share first
    // Stored bits per logical parameter, the scales included: 8 x bytes / elements (Q4_K 4.5, FP8 with
    // 128x128 F32 scales 8.002); 0 for a category with no elements.
    double bitsPerWeight() const;
};
// The same over every category.
double bitsPerWeight(const std::vector<QuantRow> &layout);

// Where the IndexShare map came from (the report's words: index_topk_pattern, indexer_types,
// formula, every_layer, index_source_layer_ids, none).
enum class IndexShareSource { None, Pattern, IndexerTypes, Formula, EveryLayer, SourceLayers };
std::string_view indexShareSourceName(IndexShareSource s);

struct IndexShareMap
{
    IndexShareSource source = IndexShareSource::None;
    std::vector<int> full;   // main layers that own an indexer
    std::vector<int> shared; // main layers that reuse one
    std::vector<std::string> mismatches;
    // The ATOM fallback (offset shifted by one), only where it differs from the transformers rule.
    std::vector<int> atomFull;
    std::vector<int> atomDiffers;
};

// A table kept in host memory (Category::HostTables): Engram's n-gram tables, an n-gram embedding.
struct HostTable
{
    std::string name;
    int layer = -1;           // the decoder layer it feeds, -1 outside the layers
    std::uint64_t rows = 0;   // the leading dimension
    std::uint64_t width = 0;  // values per row (the product of the other dimensions)
};

struct CheckpointAnalysis
{
    int mainLayers = 0;
    int layerCount = 0;            // main and MTP layers: layers.size()
    std::vector<LayerInfo> layers; // main layers then MTP layers, by index
    ParameterBudget budget;
    std::vector<QuantRow> quantLayout;
    IndexShareMap indexShare;
    // A partial download: main layers the config names that have no tensor on disk (with at least one
    // that has). They are neither sized (mixer None, no indexer) nor counted as dense or MoE layers.
    std::vector<int> layersWithoutTensors;
    // Host-resident tables and every byte they take (their scales too): what a plan puts in host memory.
    std::vector<HostTable> hostTables;
    std::uint64_t hostTableBytes = 0;
    // Dimensions read from tensor shapes, for when config.json is silent.
    std::optional<std::int64_t> diskKvLoraRank;
    std::optional<std::int64_t> diskRopeDim;
    std::optional<std::int64_t> diskIndexHeadDim;
    std::optional<std::int64_t> diskRoutedExperts;
    std::optional<std::int64_t> diskKvWidth; // k_proj's output width: num_key_value_heads x head_dim
    std::vector<std::string> warnings;
    // Where the per-layer schedule (attention kinds) came from: layer_types, compress_ratios,
    // linear_attn_config, hybrid_override_pattern, hybrid_layer_pattern; empty when the config has none.
    std::string scheduleSource;
    // The schedule against the tensors, grouped by kind over the layers concerned ("layers 3–40 (19
    // layers): ..."); also in warnings.
    std::vector<std::string> scheduleMismatches;

    // Logical elements of packed weights (MXFP4 blocks, NVFP4, compressed-tensors, AWQ / GPTQ); every other
    // tensor holds numel. parametersOf() is what a view shows. Keyed by where the tensor's bytes are (shard,
    // first byte: unique among tensors that hold any) and in that order, which is the order they are met in:
    // Kimi-K3's 247k packed expert weights cost no copy of their names and no hash of them.
    struct PackedCount
    {
        std::uint32_t shard = 0;
        std::uint64_t begin = 0;
        std::uint64_t elements = 0;
    };
    std::vector<PackedCount> packedElements;
    std::optional<std::uint64_t> packedElementsOf(const TensorInfo &t) const;
    // Stored tensors that are not parameters though not scales either (hash routing's tid2eid tables):
    // parametersOf() gives them 0, as the budget counts them.
    std::set<std::string, std::less<>> tableTensors; // a handful; looked up by view
    std::uint64_t parametersOf(const TensorInfo &t) const;

    // Towers the encoder table does not name, found by their position: a prefix ("model.audio.") that
    // holds numbered blocks of its own (layers.N / blocks.N) beside the decoder's layers. Every tensor
    // under one is an encoder's, never a decoder layer's or active text parameters.
    std::vector<std::string> towerPrefixes;
    // outsideLayersRole() and the towers above: the role of a name that is in no decoder layer, if any.
    std::optional<Category> outsideLayers(std::string_view name) const;
    // The same when outsideLayersRole(name) is known already.
    std::optional<Category> outsideLayersGiven(std::string_view name, std::optional<Category> role) const;

    // The layer a tensor belongs to, or -1 outside layers and for layer numbers the model does
    // not have (those tensors count under other). Never an index past `layers`.
    int layerOf(std::string_view name) const;
};

// Throws AtlasError("cancelled") soon after `cancel` is raised.
CheckpointAnalysis analyze(const Checkpoint &checkpoint, const std::atomic<bool> *cancel = nullptr);

} // namespace atlas
