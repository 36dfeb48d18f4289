// Structure-aware libFuzzer target: the input is read as a recipe for a checkpoint's meaning, not
// its bytes. Config keys get values of every type and size (zero, negative, 2^62, strings, floats,
// null); tensor names are assembled from the prefixes, layer numbers, expert numbers and suffixes
// real checkpoints use, plus hostile ones; shapes and dtypes vary. Every checkpoint goes through
// analyze(), the cache budget, the report, the summary, the bias plan and audit, a small routing
// simulation and the Layers view's tree model. Nothing may crash, overflow or throw anything but
// AtlasError.
#include "bias_audit.h"
#include "cache_budget.h"
#include "errors.h"
#include "layer_tree_model.h"
#include "loaded_checkpoint.h"
#include "report.h"
#include "routing.h"

#include <QCoreApplication>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

class Recipe
{
public:
    Recipe(const std::uint8_t *data, std::size_t size) : m_data(data), m_size(size) {}
    bool empty() const { return m_pos >= m_size; }
    std::uint8_t byte() { return m_pos < m_size ? m_data[m_pos++] : 0; }
    std::uint64_t u64()
    {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v = v << 8 | byte();
        return v;
    }
    template <typename T, std::size_t N> const T &pick(const std::array<T, N> &a) { return a[byte() % N]; }

private:
    const std::uint8_t *m_data;
    std::size_t m_size;
    std::size_t m_pos = 0;
};

constexpr std::array<const char *, 20> kKeys{"num_hidden_layers",
                                             "n_routed_experts",
                                             "num_experts",
                                             "num_experts_per_tok",
                                             "n_shared_experts",
                                             "first_k_dense_replace",
                                             "n_group",
                                             "topk_group",
                                             "kv_lora_rank",
                                             "qk_rope_head_dim",
                                             "max_position_embeddings",
                                             "num_nextn_predict_layers",
                                             "index_topk",
                                             "index_head_dim",
                                             "index_topk_freq",
                                             "index_skip_topk_offset",
                                             "indexer_types",
                                             "norm_topk_prob",
                                             "routed_scaling_factor",
                                             "hidden_size"};

nlohmann::json value(Recipe &r)
{
    switch (r.byte() % 12) {
    case 0:
        return 0;
    case 1:
        return -1;
    case 2:
        return r.byte() % 8;
    case 3:
        return r.byte();
    case 4:
        return std::int64_t(1) << 62;
    case 5:
        return std::uint64_t(18446744073709551615ull);
    case 6:
        return static_cast<std::int64_t>(r.u64());
    case 7:
        return "full";
    case 8:
        return 1e300;
    case 9:
        return nullptr;
    case 10: {
        nlohmann::json a = nlohmann::json::array();
        for (int i = r.byte() % 6; i > 0; --i)
            a.push_back(r.byte() % 2 ? "full" : "shared");
        return a;
    }
    default:
        return r.byte() % 2 == 0;
    }
}

constexpr std::array<const char *, 8> kPrefixes{
    "model.layers.",  "layers.",  "model.language_model.layers.", "",
    "model.layers..", "lm_head.", "model.embed_tokens.",          "model.norm."};
constexpr std::array<const char *, 18> kSuffixes{"input_layernorm.weight",
                                                 "mlp.gate.weight",
                                                 "mlp.gate.e_score_correction_bias",
                                                 "mlp.experts.",
                                                 "mlp.experts.3.up_proj.weight",
                                                 "mlp.experts.3.up_proj.weight_scale_inv",
                                                 "mlp.shared_experts.down_proj.weight",
                                                 "self_attn.indexer.wk.weight",
                                                 "self_attn.kv_a_layernorm.weight",
                                                 "self_attn.kv_a_proj_with_mqa.weight",
                                                 "self_attn.q_a_proj.weight",
                                                 "mlp.gate_proj.weight",
                                                 "",
                                                 ".",
                                                 "mlp.experts.7",
                                                 "\xc3\xbc",
                                                 "weight",
                                                 "self_attn.indexer.weights_proj.weight"};
constexpr std::array<atlas::Dtype, 6> kDtypes{atlas::Dtype::F32,     atlas::Dtype::BF16,
                                              atlas::Dtype::F8_E4M3, atlas::Dtype::F8_E8M0,
                                              atlas::Dtype::F16,     atlas::Dtype::U8};

atlas::Checkpoint build(Recipe &r)
{
    atlas::Checkpoint ckpt;
    nlohmann::json cfg = nlohmann::json::object();
    for (int i = r.byte() % 12; i > 0; --i)
        cfg[r.pick(kKeys)] = value(r);
    try {
        ckpt.config = atlas::parseModelConfig("config.json", cfg.dump());
        ckpt.hasConfig = true;
    } catch (const atlas::AtlasError &) {
    }
    atlas::ShardHeader shard;
    shard.file = "model.safetensors";
    std::uint64_t offset = 0;
    for (int i = r.byte() % 24; i > 0 && !r.empty(); --i) {
        atlas::TensorInfo t;
        std::string layer;
        switch (r.byte() % 5) {
        case 0:
            layer = std::to_string(r.byte() % 8);
            break;
        case 1:
            layer = std::to_string(static_cast<std::uint32_t>(r.u64()));
            break;
        case 2:
            layer = "2147483647";
            break;
        case 3:
            layer = "-1";
            break;
        default:
            layer = std::to_string(r.byte());
        }
        t.name = shard.keepName(std::string(r.pick(kPrefixes)) + layer + "." + r.pick(kSuffixes));
        t.dtype = r.pick(kDtypes);
        t.numel = 1;
        for (int d = r.byte() % 3; d >= 0; --d) {
            const std::uint64_t dim =
                r.byte() % 4 == 0 ? (r.u64() % (std::uint64_t(1) << 16)) : r.byte() % 17;
            t.shape.push_back(dim);
            t.numel *= dim;
        }
        t.begin = offset;
        t.end = offset + t.numel * (atlas::dtypeBits(t.dtype) / 8);
        offset = t.end;
        shard.tensors.push_back(std::move(t));
    }
    ckpt.shards.push_back(std::move(shard));
    return ckpt;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    static int argc = 1;
    static char name[] = "fuzz_checkpoint";
    static char *argv[] = {name, nullptr};
    static QCoreApplication app(argc, argv); // the tree model's tr() needs one

    Recipe r(data, size);
    auto loaded = std::make_shared<atlas::LoadedCheckpoint>();
    loaded->checkpoint = build(r);
    const atlas::Checkpoint &ckpt = loaded->checkpoint;
    loaded->analysis = atlas::analyze(ckpt);
    const atlas::CheckpointAnalysis &a = loaded->analysis;
    if (a.layers.size() != static_cast<std::size_t>(a.layerCount)) __builtin_trap();

    atlas::CacheOptions cache;
    if (r.byte() % 2) cache.contextTokens = r.u64();
    cache.kvDtype = static_cast<atlas::KvDtype>(r.byte() % 3);
    const atlas::CacheBudget budget = atlas::computeCacheBudget(ckpt, a, cache);
    (void)atlas::buildReport(ckpt, a, budget).dump();
    (void)atlas::formatSummary(ckpt, a, budget);

    try {
        const atlas::BiasFetchPlan plan = atlas::planBiasFetch(ckpt);
        std::vector<atlas::BiasTensor> tensors;
        for (const auto &item : plan.items) {
            atlas::BiasTensor t;
            t.layer = item.layer;
            t.tensor = item.tensor;
            t.dtype = item.dtype;
            t.shape = item.shape;
            t.raw.resize(item.length);
            for (auto &c : t.raw)
                c = static_cast<char>(r.byte());
            tensors.push_back(std::move(t));
        }
        const atlas::BiasAudit audit = atlas::auditBiases(ckpt.config, loaded->analysis, tensors, plan.bytes);
        if (audit.router) {
            atlas::RoutingOptions options;
            options.tokens = 1 + r.byte() % 16;
            options.threads = 1;
            (void)atlas::simulateRouting(audit.routing, *audit.router, options);
        }
    } catch (const atlas::AtlasError &) {
    }

    atlas::LayerTreeModel tree;
    tree.setCheckpoint(loaded);
    return 0;
}
