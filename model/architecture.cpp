#include "architecture.h"

#include "c_locale.h"
#include "report.h"

#include <algorithm>

namespace atlas {

namespace {

std::optional<std::int64_t> rawInt(const ModelConfig &cfg, const char *key)
{
    if (!cfg.raw.is_object()) return std::nullopt;
    const auto it = cfg.raw.find(key);
    if (it == cfg.raw.end() || !it->is_number_integer()) return std::nullopt;
    const auto v = it->get<std::int64_t>();
    return v > 0 ? std::optional<std::int64_t>(v) : std::nullopt;
}

std::string n(std::int64_t v)
{
    return groupDigits(static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0)));
}

// 2.5 -> "2.5", 2 -> "2", 1.125 -> "1.125" (up to three decimals).
std::string trimmed(double v)
{
    std::string s = fixedPoint(v, 3);
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

} // namespace

std::vector<ArchitectureFact> architectureFacts(const ModelConfig &cfg, const CheckpointAnalysis &a)
{
    const CLocaleScope cLocale;
    std::vector<ArchitectureFact> out;
    if (cfg.hiddenSize) out.push_back({"Hidden size", n(*cfg.hiddenSize), "hidden_size"});

    // Attention: heads, then the shape of what is cached.
    const auto kvLora = cfg.kvLoraRank ? cfg.kvLoraRank : a.diskKvLoraRank;
    const auto rope = cfg.qkRopeHeadDim ? cfg.qkRopeHeadDim : a.diskRopeDim;
    std::string heads = cfg.numAttentionHeads ? n(*cfg.numAttentionHeads) + " heads" : std::string();
    if (!cfg.compressRatios.empty() && cfg.headDim) {
        out.push_back({"Attention", (heads.empty() ? "" : heads + " · ") + "one K=V head × " + n(*cfg.headDim),
                       "num_attention_heads, head_dim (DeepSeek-V4: one shared key-value head)"});
    } else if (kvLora) {
        std::string v = (heads.empty() ? "" : heads + " · ") + "MLA";
        if (const auto q = rawInt(cfg, "q_lora_rank")) v += " q " + n(*q) + " /";
        v += " kv " + n(*kvLora);
        if (rope && *rope > 0) v += " + " + n(*rope) + " RoPE";
        out.push_back({"Attention", v, "num_attention_heads, q_lora_rank, kv_lora_rank, qk_rope_head_dim"});
    } else if (cfg.numAttentionHeads) {
        std::string v = heads;
        if (cfg.numKeyValueHeads && *cfg.numKeyValueHeads != *cfg.numAttentionHeads)
            v += " · " + n(*cfg.numKeyValueHeads) + " KV heads";
        if (cfg.headDim) v += " × " + n(*cfg.headDim);
        out.push_back({"Attention", v, "num_attention_heads, num_key_value_heads, head_dim"});
    }

    // Experts: routed (+ shared), top-k, groups.
    const auto experts = cfg.nRoutedExperts ? cfg.nRoutedExperts : a.diskRoutedExperts;
    if (experts && *experts > 0) {
        std::string v = n(*experts) + " routed";
        if (cfg.nSharedExperts && *cfg.nSharedExperts > 0)
            v += " + " + n(*cfg.nSharedExperts) + " shared";
        else if (a.budget.byCategory[static_cast<std::size_t>(Category::SharedExperts)] > 0)
            v += " + shared"; // Qwen3-Next: shared_expert_intermediate_size, no count; the tensors show one

        if (cfg.numExpertsPerTok) v += " · top-" + n(*cfg.numExpertsPerTok);
        out.push_back({"Experts", v, "n_routed_experts (or the tensors), n_shared_experts, num_experts_per_tok"});
        if (cfg.nGroup && *cfg.nGroup > 1)
            out.push_back({"Expert groups", n(*cfg.nGroup) + (cfg.topkGroup ? " · keep " + n(*cfg.topkGroup) : ""),
                           "n_group, topk_group: tokens pick experts only inside the best groups"});
        if (cfg.routedScalingFactor)
            out.push_back({"Routed scaling", "× " + trimmed(*cfg.routedScalingFactor),
                           "routed_scaling_factor: the routed experts' output is multiplied by it"});
    } else {
        out.push_back({"Experts", "none (dense)", "no routed experts in config.json or the tensors"});
    }
    if (cfg.indexTopk)
        out.push_back({"Sparse attention", "top-" + n(*cfg.indexTopk) + " keys" +
                                               (cfg.indexHeadDim ? " · index dim " + n(*cfg.indexHeadDim) : ""),
                       "index_topk, index_head_dim: each query attends to the keys its indexer picks"});
    if (const auto v = rawInt(cfg, "vocab_size")) out.push_back({"Vocabulary", n(*v), "vocab_size"});
    if (cfg.maxPositionEmbeddings)
        out.push_back({"Context", n(*cfg.maxPositionEmbeddings) + " tokens", "max_position_embeddings"});
    return out;
}

} // namespace atlas
