#include "layer_kinds.h"

#include <algorithm>

namespace atlas {

const std::vector<MixerKindRow> &mixerKinds()
{
    // The cache formulas are domain.md sections 7 and 13; the TP rules section 14 (vLLM's placement).
    static const std::vector<MixerKindRow> rows{
        {MixerKind::Full, "full_attention", "full_attention,minimax_m3_sparse,qwen_sparse_attention", "full attention", "attention", false, true, TpCacheSplit::KvHeads,
         "(num_key_value_heads × head_dim + num_key_value_heads × v_head_dim) × KV bytes per token", LayerAttention::Gqa},
        {MixerKind::Sliding, "sliding_attention", "sliding_attention", "sliding window", "sliding", false, false, TpCacheSplit::KvHeads,
         "the same per token, up to sliding_window tokens (swa_* heads when given)", LayerAttention::Sliding},
        {MixerKind::Mla, "multi_latent_attention", "multi_latent_attention,deepseek_sparse_attention", "MLA", "mla", false, true, TpCacheSplit::Replicated,
         "(kv_lora_rank + qk_rope_head_dim) × KV bytes per token, + a DSA index entry on indexer layers",
         LayerAttention::Mla},
        {MixerKind::Kda, "kimi_delta_attention", "kimi_delta_attention", "KDA", "linear", true, false, TpCacheSplit::Heads,
         "per sequence: 3·h·d·(K−1) BF16 convolutions + h·d·d state", LayerAttention::Linear},
        {MixerKind::GatedDeltaNet, "gated_deltanet", "gated_deltanet", "Gated DeltaNet", "linear", true, false, TpCacheSplit::Heads,
         "per sequence: (2·nk·dk + nv·dv)·(K−1) BF16 convolutions + nv·dv·dk state", LayerAttention::Linear},
        {MixerKind::Mamba2, "mamba2", "mamba,mamba2", "Mamba-2", "linear", true, false, TpCacheSplit::Heads,
         "per sequence: (heads·head_dim + 2·n_groups·ssm_state_size)·(K−1) BF16 + heads·head_dim·ssm_state_size",
         LayerAttention::Linear},
        {MixerKind::Linear, "linear_attention", "linear_attention,recurrent", "linear attention", "linear", true, false, TpCacheSplit::Heads,
         "a state per sequence the config does not size", LayerAttention::Linear},
        {MixerKind::Window, "window_attention", "", "window only", "compressed", false, false, TpCacheSplit::Replicated,
         "per sequence: sliding_window rows of the K=V head", LayerAttention::Compressed},
        {MixerKind::CompressedSparse, "compressed_sparse_attention", "", "compressed sparse (ratio 4)", "compressed", false,
         true, TpCacheSplit::Replicated, "a row (and an index row) per 4 tokens + the window and compressor states",
         LayerAttention::Compressed},
        {MixerKind::HeavilyCompressed, "heavily_compressed_attention", "", "heavily compressed (ratio 128)", "compressed",
         false, true, TpCacheSplit::Replicated, "a row per 128 tokens + the window and compressor state",
         LayerAttention::Compressed},
        {MixerKind::None, "none", "none", "none", "none", false, false, TpCacheSplit::None, "nothing", LayerAttention::None},
    };
    return rows;
}

const MixerKindRow &mixerKind(MixerKind kind)
{
    const auto &rows = mixerKinds();
    return *std::find_if(rows.begin(), rows.end(), [&](const MixerKindRow &r) { return r.kind == kind; });
}

const MixerKindRow *mixerKindOfWord(std::string_view word)
{
    if (word.empty()) return nullptr;
    for (const MixerKindRow &r : mixerKinds())
        for (std::string_view rest = r.words; !rest.empty();) {
            const auto comma = rest.find(',');
            if (rest.substr(0, comma) == word) return &r;
            rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        }
    return nullptr;
}

bool isRecurrentWord(std::string_view word)
{
    const MixerKindRow *r = mixerKindOfWord(word);
    return r && r->recurrent;
}

} // namespace atlas
