#include "gguf_names.h"

#include <charconv>

namespace atlas {

namespace {

using enum GgufNaming;

// gguf-py/gguf/tensor_mapping.py (TensorNameMap: the safetensors names of each MODEL_TENSOR) and
// constants.py TENSOR_NAMES (their GGUF names), for the DeepSeek-V3 / GLM-MoE family.
constexpr GgufNameRow kNames[] = {
    {true, "input_layernorm.weight", "attn_norm.weight", Same},
    {true, "post_attention_layernorm.weight", "ffn_norm.weight", Same},
    {true, "post_attention_layernorm.weight", "post_attention_norm.weight", Same}, // glm4moe (ATTN_POST_NORM)
    {true, "self_attn.q_proj.weight", "attn_q.weight", Same},
    {true, "self_attn.k_proj.weight", "attn_k.weight", Same},
    {true, "self_attn.v_proj.weight", "attn_v.weight", Same},
    {true, "self_attn.q_proj.bias", "attn_q.bias", Same}, // glm4moe's biased q, k, v
    {true, "self_attn.k_proj.bias", "attn_k.bias", Same},
    {true, "self_attn.v_proj.bias", "attn_v.bias", Same},
    {true, "self_attn.q_norm.weight", "attn_q_norm.weight", Same},
    {true, "self_attn.k_norm.weight", "attn_k_norm.weight", Same},
    {true, "self_attn.q_a_proj.weight", "attn_q_a.weight", Same},
    {true, "self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight", Same},
    {true, "self_attn.q_b_proj.weight", "attn_q_b.weight", Same},
    {true, "self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", Same},
    {true, "self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight", Same},
    {true, "self_attn.kv_b_proj.weight", "attn_k_b.weight", SplitK},
    {true, "self_attn.kv_b_proj.weight", "attn_v_b.weight", SplitV},
    {true, "self_attn.kv_b_proj.weight", "attn_kv_b.weight", Same}, // older conversions kept it whole
    {true, "self_attn.o_proj.weight", "attn_output.weight", Same},
    {true, "self_attn.indexer.wq_b.weight", "indexer.attn_q_b.weight", Same},
    {true, "self_attn.indexer.wk.weight", "indexer.attn_k.weight", Same},
    {true, "self_attn.indexer.k_norm.weight", "indexer.k_norm.weight", Same},
    {true, "self_attn.indexer.k_norm.bias", "indexer.k_norm.bias", Same},
    {true, "self_attn.indexer.weights_proj.weight", "indexer.proj.weight", Same},
    {true, "mlp.gate.weight", "ffn_gate_inp.weight", Same},
    {true, "mlp.gate.e_score_correction_bias", "exp_probs_b.bias", Same},
    {true, "mlp.experts.*.gate_proj.weight", "ffn_gate_exps.weight", Stacked},
    {true, "mlp.experts.*.up_proj.weight", "ffn_up_exps.weight", Stacked},
    {true, "mlp.experts.*.down_proj.weight", "ffn_down_exps.weight", Stacked},
    {true, "mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight", Same},
    {true, "mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight", Same},
    {true, "mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight", Same},
    {true, "mlp.gate_proj.weight", "ffn_gate.weight", Same},
    {true, "mlp.up_proj.weight", "ffn_up.weight", Same},
    {true, "mlp.down_proj.weight", "ffn_down.weight", Same},
    // An MTP block (DeepSeek-V3 / GLM: model.layers.L.* past the main layers; llama.cpp blk.L.nextn.*).
    {true, "eh_proj.weight", "nextn.eh_proj.weight", Same},
    {true, "enorm.weight", "nextn.enorm.weight", Same},
    {true, "hnorm.weight", "nextn.hnorm.weight", Same},
    {true, "embed_tokens.weight", "nextn.embed_tokens.weight", Same},
    {true, "shared_head.norm.weight", "nextn.shared_head_norm.weight", Same},
    {true, "shared_head.head.weight", "nextn.shared_head_head.weight", Same},
    {false, "model.embed_tokens.weight", "token_embd.weight", Same},
    {false, "model.norm.weight", "output_norm.weight", Same},
    {false, "lm_head.weight", "output.weight", Same},
};

int number(std::string_view digits)
{
    int v = -1;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return r.ec == std::errc() && r.ptr == digits.data() + digits.size() && v >= 0 ? v : -1;
}

// "model.layers.N.rest" -> (N, rest); (-1, name) otherwise.
std::pair<int, std::string_view> layerOfSafetensors(std::string_view name)
{
    constexpr std::string_view kPrefix = "model.layers.";
    if (!name.starts_with(kPrefix)) return {-1, name};
    const std::string_view tail = name.substr(kPrefix.size());
    const auto dot = tail.find('.');
    if (dot == std::string_view::npos) return {-1, name};
    const int layer = number(tail.substr(0, dot));
    return layer < 0 ? std::pair{-1, name} : std::pair{layer, tail.substr(dot + 1)};
}

std::pair<int, std::string_view> layerOfGguf(std::string_view name)
{
    if (!name.starts_with("blk.")) return {-1, name};
    const std::string_view tail = name.substr(4);
    const auto dot = tail.find('.');
    if (dot == std::string_view::npos) return {-1, name};
    const int layer = number(tail.substr(0, dot));
    return layer < 0 ? std::pair{-1, name} : std::pair{layer, tail.substr(dot + 1)};
}

// A safetensors pattern with "*" for one run of digits.
bool matchesExpert(std::string_view pattern, std::string_view s)
{
    const auto star = pattern.find('*');
    if (star == std::string_view::npos) return pattern == s;
    if (!s.starts_with(pattern.substr(0, star)) || !s.ends_with(pattern.substr(star + 1))) return false;
    if (s.size() < pattern.size()) return false;
    return number(s.substr(star, s.size() - (pattern.size() - 1))) >= 0;
}

} // namespace

std::span<const GgufNameRow> ggufNameTable()
{
    return kNames;
}

std::vector<std::string> ggufNamesOf(std::string_view name)
{
    const auto [layer, rest] = layerOfSafetensors(name);
    std::vector<std::string> out;
    for (const auto &row : kNames) {
        if (row.inLayer != (layer >= 0) || !matchesExpert(row.safetensors, rest)) continue;
        out.push_back(layer >= 0 ? "blk." + std::to_string(layer) + "." + std::string(row.gguf) : std::string(row.gguf));
    }
    return out;
}

const GgufNameRow *ggufNameRow(std::string_view ggufName)
{
    const auto [layer, rest] = layerOfGguf(ggufName);
    for (const auto &row : kNames)
        if (row.inLayer == (layer >= 0) && row.gguf == rest) return &row;
    return nullptr;
}

std::optional<std::string> safetensorsNameOf(std::string_view ggufName)
{
    const GgufNameRow *row = ggufNameRow(ggufName);
    if (!row) return std::nullopt;
    const int layer = layerOfGguf(ggufName).first;
    return layer >= 0 ? "model.layers." + std::to_string(layer) + "." + std::string(row->safetensors)
                      : std::string(row->safetensors);
}

} // namespace atlas
