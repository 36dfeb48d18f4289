#include "gguf_config.h"

namespace atlas {

namespace {

// ARCH.KEY -> config.json's key. Keys from llama.cpp src/llama-arch.cpp LLM_KV_NAMES and gguf-py
// constants.py Keys; what each was written from, convert_hf_to_gguf.py (TextModel.set_gguf_parameters,
// DeepseekV2Model.set_gguf_parameters, Glm4MoeModel.set_gguf_parameters).
constexpr GgufConfigRow kRows[] = {
    {"embedding_length", "hidden_size"},
    {"context_length", "max_position_embeddings"},
    {"feed_forward_length", "intermediate_size"},
    {"expert_feed_forward_length", "moe_intermediate_size"},
    {"expert_count", "n_routed_experts"},
    {"expert_used_count", "num_experts_per_tok"},
    {"expert_shared_count", "n_shared_experts"},
    {"leading_dense_block_count", "first_k_dense_replace"},
    {"expert_group_count", "n_group"},
    {"expert_group_used_count", "topk_group"},
    {"expert_weights_scale", "routed_scaling_factor"},
    {"expert_weights_norm", "norm_topk_prob"},
    {"nextn_predict_layers", "num_nextn_predict_layers"},
    {"attention.head_count", "num_attention_heads"},
    {"attention.q_lora_rank", "q_lora_rank"},
    {"attention.kv_lora_rank", "kv_lora_rank"},
    {"attention.sliding_window", "sliding_window"},
    {"attention.indexer.head_count", "index_n_heads"},
    {"attention.indexer.key_length", "index_head_dim"},
    {"attention.indexer.top_k", "index_topk"},
    {"rope.dimension_count", "qk_rope_head_dim"},
    {"vocab_size", "vocab_size"},
};

// general.architecture -> model_type, where the names differ (llama-arch.cpp LLM_ARCH_NAMES).
struct ArchRow
{
    std::string_view arch;
    std::string_view modelType;
};
constexpr ArchRow kArchs[] = {
    {"glm4moe", "glm4_moe"},
    {"glm-dsa", "glm_moe_dsa"},
    {"deepseek32", "deepseek_v32"},
    {"qwen3moe", "qwen3_moe"},
    {"qwen3next", "qwen3_next"},
    {"kimi-linear", "kimi_linear"},
    {"minimax-m2", "minimax_m2"},
    {"gpt-oss", "gpt_oss"},
};

} // namespace

std::span<const GgufConfigRow> ggufConfigTable()
{
    return kRows;
}

std::string ggufModelType(const GgufHeader &h)
{
    const std::string arch = h.architecture();
    // DeepSeek-V2 and V3 share llama.cpp's deepseek2; V3 gates its experts by sigmoid (expert_gating_func 2,
    // LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID) with a correction bias, V2 by softmax.
    if (arch == "deepseek2") return h.integer("deepseek2.expert_gating_func").value_or(1) == 2 ? "deepseek_v3" : "deepseek_v2";
    for (const auto &row : kArchs)
        if (row.arch == arch) return std::string(row.modelType);
    return arch;
}

nlohmann::json ggufConfigJson(const GgufHeader &h, bool correctionBias)
{
    nlohmann::json cfg = nlohmann::json::object();
    const std::string arch = h.architecture();
    cfg["model_type"] = ggufModelType(h);
    if (const std::string name = h.text("general.name"); !name.empty()) cfg["_name_or_path"] = name;
    const std::string prefix = arch + ".";
    auto put = [&](std::string_view key, const GgufValue &v) {
        if (v.type == GgufType::Bool)
            cfg[std::string(key)] = v.integer != 0;
        else if (v.integral)
            cfg[std::string(key)] = v.integer;
        else if (v.type != GgufType::String && v.type != GgufType::Array)
            cfg[std::string(key)] = v.number;
    };
    for (const auto &row : kRows)
        if (const GgufValue *v = h.find(prefix + std::string(row.ggufKey))) put(row.configKey, *v);
    // block_count counts the MTP (nextn) blocks too: llama.cpp appends them as the last blocks
    // (Glm4MoeModel: block_count = num_hidden_layers + num_nextn_predict_layers).
    if (auto blocks = h.integer(prefix + "block_count")) {
        const std::int64_t nextn = h.integer(prefix + "nextn_predict_layers").value_or(0);
        cfg["num_hidden_layers"] = *blocks - (nextn > 0 && nextn < *blocks ? nextn : 0); // both ≥ 0 here: no overflow
    }
    // Heads: MLA files give K's and V's per-head widths as key_length_mla / value_length_mla, and the cached
    // latent as key_length (kv_lora_rank + rope) with one KV head; others give the heads' widths directly.
    // Widths used in arithmetic here: only those a config could hold (0..2^20); others are left to
    // parseModelConfig's warnings through the keys copied above.
    auto width = [&](const char *k) -> std::optional<std::int64_t> {
        const auto v = h.integer(prefix + k);
        return v && *v >= 0 && *v <= kMaxConfigDim ? v : std::nullopt;
    };
    const auto kvHeads = width("attention.head_count_kv");
    const auto keyMla = width("attention.key_length_mla");
    const auto valueMla = width("attention.value_length_mla");
    const auto key = width("attention.key_length");
    const auto value = width("attention.value_length");
    const bool mla = width("attention.kv_lora_rank").value_or(0) > 0;
    if (mla) {
        const std::int64_t rope = width("rope.dimension_count").value_or(0);
        if (keyMla) cfg["qk_nope_head_dim"] = *keyMla - rope;
        else if (key && !valueMla) cfg["qk_nope_head_dim"] = *key - rope; // older files: the per-head width
        if (valueMla) cfg["v_head_dim"] = *valueMla;
        else if (value && !keyMla) cfg["v_head_dim"] = *value;
        if (cfg.contains("num_attention_heads")) cfg["num_key_value_heads"] = cfg["num_attention_heads"];
    } else {
        if (kvHeads) cfg["num_key_value_heads"] = *kvHeads;
        if (key) cfg["head_dim"] = *key;
        if (value && (!key || *value != *key)) cfg["v_head_dim"] = *value;
    }
    // expert_gating_func: 1 softmax, 2 sigmoid (llama-hparams.h llama_expert_gating_func_type).
    if (auto gating = h.integer(prefix + "expert_gating_func")) {
        if (*gating == 1) cfg["scoring_func"] = "softmax";
        if (*gating == 2) cfg["scoring_func"] = "sigmoid";
    }
    // A sigmoid router with a correction bias per layer (exp_probs_b) is DeepSeek-V3's noaux_tc.
    if (correctionBias) cfg["topk_method"] = "noaux_tc";
    // What ckpt-atlas's own writer marks its files with (as config.json's ckpt_atlas_synthetic).
    if (const GgufValue *s = h.find("ckpt_atlas.synthetic"); s && s->type == GgufType::Bool && s->integer)
        cfg["ckpt_atlas_synthetic"] = true;
    // GLM-5.2's IndexShare map: a bool per layer, true for a layer that owns its indexer (conversion/glm.py
    // GlmMoeDsaModel.set_gguf_parameters writes [t == "full" for t in indexer_types]).
    if (const GgufValue *types = h.find(prefix + "attention.indexer.types");
        types && types->type == GgufType::Array && types->held && !types->numbers.empty()) {
        nlohmann::json list = nlohmann::json::array();
        for (double t : types->numbers)
            list.push_back(t != 0 ? "full" : "shared");
        cfg["indexer_types"] = std::move(list);
    }
    return cfg;
}

ModelConfig ggufModelConfig(const GgufHeader &header, bool correctionBias)
{
    const nlohmann::json cfg = ggufConfigJson(header, correctionBias);
    return parseModelConfig("the GGUF metadata", cfg.dump());
}

} // namespace atlas
