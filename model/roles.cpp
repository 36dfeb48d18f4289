#include "roles.h"

#include <algorithm>
#include <charconv>
#include <unordered_set>
#include <vector>

namespace atlas {

namespace {

// Segment k of a dotted name ("" past the end).
std::string_view segment(std::string_view s, int k)
{
    for (int i = 0; i < k; ++i) {
        const auto dot = s.find('.');
        if (dot == std::string_view::npos) return {};
        s.remove_prefix(dot + 1);
    }
    return s.substr(0, s.find('.'));
}

int expertNumber(std::string_view digits)
{
    int v = -1;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return r.ec == std::errc() && r.ptr == digits.data() + digits.size() && v >= 0 ? v : -1;
}

// "" any; "x*" starts with x; "*x" ends with x; otherwise equal.
bool globMatch(std::string_view pattern, std::string_view s)
{
    if (pattern.empty()) return true;
    if (pattern.back() == '*') return s.starts_with(pattern.substr(0, pattern.size() - 1));
    if (pattern.front() == '*') return s.ends_with(pattern.substr(1));
    return s == pattern;
}

using enum Category;
constexpr RoleScope L = RoleScope::Layer, T = RoleScope::Outside;

// The table, first match wins. A layer row looks at the name after "layers.N." (its first segment,
// its second, its end); an outside row at a name that is in no decoder layer. Adding a family adds rows.
constexpr RoleRow kRoles[] = {
    // Routers' correction biases and lookup tables, wherever they sit.
    {L, "", "", "e_score_correction_bias", Router, "DeepSeek-V3, GLM-5, Kimi, MiniMax (on block_sparse_moe)"},
    {L, "", "", ".tid2eid", RouterTables, "DeepSeek-V4 hash routing (token id -> experts)"},
    // Host-resident n-gram memories: the tables in host memory (rows fetched per token), their hashing
    // constants (I64 buffers, not parameters), and the projections that run on the GPU.
    {L, "ple", "ple_embedding", ".layer_multipliers", RouterTables, "Qwen3.8-Flash-Next n-gram hashing (I64)"},
    {L, "ple", "ple_embedding", ".ngram_heads_offsets", RouterTables, "Qwen3.8-Flash-Next n-gram hashing (I64)"},
    {L, "ple", "ple_embedding", ".ngram_heads_vocab_sizes", RouterTables, "Qwen3.8-Flash-Next n-gram hashing (I64)"},
    {L, "ple", "ple_embedding", "", HostTables, "Qwen3.8-Flash-Next n-gram embedding (ngram_embedding.shard_K)"},
    {L, "ple", "", "", Embedding, "Qwen3.8-Flash-Next n-gram embedding's key/value projections, norms, conv"},
    {L, "engram", "embed", "", HostTables, "DeepSeek-V4.1 Engram tables (engram.embed.weight and its row scales)"},
    {L, "engram", "", "", Embedding, "DeepSeek-V4.1 Engram's wkv projection and q/k gates (on the GPU)"},
    // Hyper-connections: multi-stream residual mixing, and Kimi's attention residuals.
    {L, "hc_*", "", "", HyperConnections, "DeepSeek-V4, GLM-5.3-Flash (mHC)"},
    {L, "*_hyper_connection", "", "", HyperConnections, "Qwen3.8-Flash-Next (attn_/mlp_hyper_connection)"},
    {L, "*_res_proj", "", "", HyperConnections, "Kimi-K3 attention residuals (self_attention_res_proj, mlp_res_proj)"},
    {L, "*_res_norm", "", "", HyperConnections, "Kimi-K3 attention residuals"},
    {L, "*_sconv", "", "", HyperConnections, "Inkling (short convolutions of the attention and MLP outputs into the residual)"},
    // llama.cpp's GGUF names inside blk.N (src/llama-arch.cpp LLM_TENSOR_NAMES; gguf-py constants.py
    // TENSOR_NAMES), each where its safetensors original sits: the q and kv low-rank norms are attention's as
    // self_attn.q_a_layernorm is; the input and post-attention norms are the layer's norms.
    {L, "exp_probs_b", "", "", Router, "llama.cpp GGUF (blk.N.exp_probs_b.bias: e_score_correction_bias)"},
    {L, "ffn_gate_inp", "", "", Router, "llama.cpp GGUF (the router's weight)"},
    {L, "ffn_gate_inp_shexp", "", "", SharedExperts, "llama.cpp GGUF (Qwen2-MoE's shared expert gate)"},
    {L, "indexer", "", "", Indexer, "llama.cpp GGUF (blk.N.indexer.*: the DSA lightning indexer)"},
    {L, "attn_norm", "", "", Norms, "llama.cpp GGUF (input_layernorm)"},
    {L, "ffn_norm", "", "", Norms, "llama.cpp GGUF (post_attention_layernorm)"},
    {L, "attn_*", "", "", Attention, "llama.cpp GGUF (attn_q_a, attn_kv_a_mqa, attn_k_b, attn_v_b, attn_output, ...)"},
    {L, "*_exps", "", "", RoutedExperts, "llama.cpp GGUF (ffn_{gate,up,down}_exps: the experts stacked)"},
    {L, "*_shexp", "", "", SharedExperts, "llama.cpp GGUF (ffn_{gate,up,down}_shexp)"},
    {L, "ffn_*", "", "", DenseMlp, "llama.cpp GGUF (ffn_gate, ffn_up, ffn_down of a dense block)"},
    {L, "nextn", "", "", Mtp, "llama.cpp GGUF (blk.N.nextn.*: an MTP block's own tensors)"},
    // Sparse-attention indexers inside attention.
    {L, "self_attn", "indexer", "", Indexer, "DeepSeek-V3.2, GLM-5"},
    {L, "attn", "indexer", "", Indexer, "DeepSeek-V4"},
    {L, "self_attn", "index_*", "", Indexer, "MiniMax-M3 (index_q/k_proj, index_q/k_norm)"},
    // Linear attention and state-space mixers.
    {L, "linear_attn", "", "", LinearAttention, "Qwen3-Next (Gated DeltaNet)"},
    {L, "mamba", "", "", LinearAttention, "Mamba-2 hybrids"},
    {L, "mixer", "A_log", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    {L, "mixer", "D", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    {L, "mixer", "dt_bias", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    {L, "mixer", "conv1d", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    {L, "mixer", "in_proj", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    {L, "mixer", "out_proj", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    {L, "mixer", "norm", "", LinearAttention, "Nemotron-H (Mamba-2 mixer)"},
    // Softmax attention of every naming (biases, sinks, q/k norms, compressors included).
    {L, "self_attn", "", "", Attention, "Llama-style, DeepSeek, GLM, Qwen, Mixtral"},
    {L, "attn", "", "", Attention, "DeepSeek-V4 (wq_a, wkv, compressor, attn_sink)"},
    {L, "attention", "", "", Attention, "InternLM, Llama 4"},
    {L, "self_attention", "", "", Attention, "Falcon, ChatGLM"},
    {L, "mixer", "q_proj", "", Attention, "Nemotron-H (attention mixer)"},
    {L, "mixer", "k_proj", "", Attention, "Nemotron-H (attention mixer)"},
    {L, "mixer", "v_proj", "", Attention, "Nemotron-H (attention mixer)"},
    {L, "mixer", "o_proj", "", Attention, "Nemotron-H (attention mixer)"},
    // Mixture-of-experts blocks: routed experts, shared experts, the router.
    {L, "mlp", "experts", "", RoutedExperts, "DeepSeek, GLM, Qwen, gpt-oss"},
    {L, "block_sparse_moe", "experts", "", RoutedExperts, "Mixtral, Kimi, MiniMax"},
    {L, "feed_forward", "experts", "", RoutedExperts, "Llama 4"},
    {L, "moe", "experts", "", RoutedExperts, "Arctic-style"},
    {L, "mixer", "experts", "", RoutedExperts, "Nemotron-H (MoE mixer)"},
    {L, "ffn", "experts", "", RoutedExperts, "DeepSeek-V4"},
    {L, "*", "shared_expert*", "", SharedExperts, "DeepSeek, GLM, Qwen2-MoE, DeepSeek-V4"},
    {L, "*", "gate", "", Router, "DeepSeek, Mixtral, DeepSeek-V4 (gate.bias)"},
    {L, "*", "router", "", Router, "gpt-oss, Llama 4"},
    // Dense MLPs (what is left in an MLP container).
    {L, "mlp", "", "", DenseMlp, "most families"},
    {L, "block_sparse_moe", "", "", DenseMlp, "Mixtral naming"},
    {L, "feed_forward", "", "", DenseMlp, "Llama 4"},
    {L, "moe", "", "", DenseMlp, "Arctic-style"},
    {L, "mixer", "", "", DenseMlp, "Nemotron-H (MLP mixer)"},
    {L, "ffn", "", "", DenseMlp, "DeepSeek-V4"},
    // Norms of a layer: input_layernorm, post_attention_layernorm, attn_norm, ffn_norm, enorm, hnorm, ...
    {L, "*norm", "", "", Norms, "every family"},
    {L, "layer_scalar", "", "", Norms, "Gemma 4 (a learned per-layer output scale)"},

    // Outside the decoder layers: embedding and head, final norms, hyper-connection heads.
    {T, "*embed_tokens", "", "", Embedding, "every family"},
    {T, "embed", "", "", Embedding, "DeepSeek-V4"},
    {T, "embed_out", "", "", Embedding, "GPT-NeoX"},
    {T, "embeddings", "", "", Embedding, "Nemotron-H (backbone.embeddings)"},
    {T, "*lm_head", "", "", Embedding, "every family"},
    {T, "unembed", "", "", Embedding, "Inkling (model.llm.unembed)"},
    {T, "embed_norm", "", "", Norms, "Inkling (model.llm.embed_norm, the embedding's norm)"},
    {T, "head", "", "", Embedding, "DeepSeek-V4"},
    {T, "hc_head_*", "", "", HyperConnections, "DeepSeek-V4 (the head's stream mixing)"},
    {T, "hc_head", "", "", HyperConnections, "Tencent Hy4 (model.hc_head.hc_head_fn)"},
    {T, "hc_norm", "", "", HyperConnections, "Qwen3.8-Flash-Next (hyper_connection_mixer: the streams into one)"},
    {T, "input_mix_weight_*", "", "", HyperConnections, "Qwen3.8-Flash-Next (hyper_connection_mixer)"},
    {T, "*_res_proj", "", "", HyperConnections, "Kimi-K3 (output_attn_res_proj)"},
    {T, "*_res_norm", "", "", HyperConnections, "Kimi-K3 (output_attn_res_norm)"},
    {T, "token_embd", "", "", Embedding, "llama.cpp GGUF"},
    {T, "output", "", "", Embedding, "llama.cpp GGUF (the head)"},
    {T, "output_norm", "", "", Norms, "llama.cpp GGUF"},
    {T, "norm", "", "", Norms, "every family"},
    {T, "norm_f", "", "", Norms, "Nemotron-H, Mamba"},
    {T, "final_layernorm", "", "", Norms, "Falcon, ChatGLM"},
    {T, "final_norm", "", "", Norms, "Llama 4"},
};

// Modules whose layer numbers are not decoder layers: vision and audio towers and their projectors
// (domain.md section 12), and MTP blocks under mtp.* (DeepSeek-V4 mtp.N, Qwen3-Next mtp.layers.N).
constexpr EncoderRow kEncoders[] = {
    {"vision_tower", "LLaVA, Kimi-K3, MiniMax"},
    {"visual", "Qwen-VL"},
    {"vision_model", "Llama 4, Idefics"},
    {"vision_encoder", "Pixtral-style"},
    {"multi_modal_projector", "LLaVA, Llama 4"},
    {"mm_projector", "LLaVA-1.5"},
    {"patch_merge*", "Kimi-VL (patch_merger)"},
    {"vision_language_adapter", "Pixtral"},
    {"audio_tower", "Qwen2-Audio"},
    {"embed_vision", "Gemma 3n"},
    {"embed_audio", "Gemma 3n"},
    {"speech_*", "speech encoders"},
    {"audio_encoder", "MiMo-V2.5 (audio_encoder.projection.mlp.N)"},
    {"sam_model", "DeepSeek-OCR (its SAM vision tower)"},
    {"projector", "DeepSeek-OCR (model.projector: vision features into the text width)"},
    {"image_newline", "DeepSeek-OCR (the learned row separator of the image tokens)"},
    {"view_seperator", "DeepSeek-OCR (the learned separator between views; spelled so in its files)"},
    {"audio", "Inkling (model.audio: its dMel audio embedding)"},
    {"vision", "DeepSeek-V4.1 (vision.blocks.N)"},
    {"aligner", "DeepSeek-V4.1 (the vision features into the text width)"},
    {"image_start", "DeepSeek-V4.1 (a learned image delimiter)"},
    {"image_end", "DeepSeek-V4.1 (a learned image delimiter)"},
};

// The last module name of a dotted tensor name (the segment before the leaf): "model.norm.weight" -> "norm".
std::string_view moduleOf(std::string_view name)
{
    const auto lastDot = name.rfind('.');
    const std::string_view module = lastDot == std::string_view::npos ? name : name.substr(0, lastDot);
    const auto prev = module.rfind('.');
    return prev == std::string_view::npos ? module : module.substr(prev + 1);
}

} // namespace

std::span<const RoleRow> roleTable()
{
    return kRoles;
}

std::span<const EncoderRow> encoderTable()
{
    return kEncoders;
}

int decidingRow(std::string_view name, RoleScope scope)
{
    const std::string_view s0 = scope == RoleScope::Layer ? segment(name, 0) : moduleOf(name);
    const std::string_view s1 = scope == RoleScope::Layer ? segment(name, 1) : std::string_view();
    for (std::size_t i = 0; i < std::size(kRoles); ++i) {
        const RoleRow &row = kRoles[i];
        if (row.scope != scope || !globMatch(row.first, s0) || !globMatch(row.second, s1)) continue;
        if (!row.ending.empty() && !name.ends_with(row.ending)) continue;
        return static_cast<int>(i);
    }
    return -1;
}

LayerRole layerRole(std::string_view rest)
{
    if (const int i = decidingRow(rest, RoleScope::Layer); i >= 0) {
        const RoleRow &row = kRoles[static_cast<std::size_t>(i)];
        if (row.category == Category::RoutedExperts) {
            // Per expert ("experts.7.w1") or fused, the expert count then the leading dimension.
            const int expert = expertNumber(segment(rest, 2));
            return {Category::RoutedExperts, expert, expert < 0};
        }
        return {row.category};
    }
    // No row: position decides before "other" does. Anything under experts.N. is a routed expert.
    if (const auto at = rest.find("experts."); at != std::string_view::npos &&
                                               (at == 0 || rest[at - 1] == '.') &&
                                               rest.find("shared_expert") == std::string_view::npos) {
        const int expert = expertNumber(segment(rest.substr(at), 1));
        if (expert >= 0) return {Category::RoutedExperts, expert, false};
    }
    return {Category::Other};
}

// Whether a segment names an encoder (a row of kEncoders): the exact names in one hash set, the few
// prefixes ("patch_merge*") apart; asked for every segment before "layers" of every name (497k in Kimi-K3).
static bool encoderSegment(std::string_view seg)
{
    struct Table
    {
        std::unordered_set<std::string_view> exact;
        std::vector<std::string_view> prefixes;
        Table()
        {
            for (const EncoderRow &e : kEncoders)
                if (e.segment.ends_with('*'))
                    prefixes.push_back(e.segment.substr(0, e.segment.size() - 1));
                else
                    exact.insert(e.segment);
        }
    };
    static const Table table;
    if (table.exact.count(seg)) return true;
    for (const auto p : table.prefixes)
        if (seg.starts_with(p)) return true;
    return false;
}

std::optional<Category> outsideLayersRole(std::string_view name)
{
    // A segment naming an encoder tower or projector makes the whole tensor the encoder's. Only the
    // segments before the first "layers" can: what follows "layers.N." is a decoder layer's own naming
    // (and skipping it keeps this cheap on 118k names).
    for (std::string_view rest = name; !rest.empty();) {
        const auto dot = rest.find('.');
        const std::string_view seg = rest.substr(0, dot);
        if (seg == "layers") break;
        if (encoderSegment(seg)) return Category::Encoders;
        if (dot == std::string_view::npos) break;
        rest.remove_prefix(dot + 1);
    }
    // MTP blocks outside "layers.N.": "mtp.0.e_proj", "mtp.fc", "model.mtp.layers.0.*".
    if (name.starts_with("mtp.") || name.find(".mtp.") != std::string_view::npos ||
        name.starts_with("mtp_layers.") || name.find(".mtp_layers.") != std::string_view::npos)
        return Category::Mtp;
    return std::nullopt;
}

std::optional<TensorPlace> mtpBlockPlace(std::string_view name)
{
    std::string_view rest;
    for (std::string_view prefix :
         {"mtp.layers.", "model.mtp.layers.", "mtp.", "model.mtp.", "mtp_layers.", "model.mtp_layers."})
        if (name.starts_with(prefix)) {
            rest = name.substr(prefix.size());
            break;
        }
    const auto dot = rest.find('.');
    if (rest.empty() || dot == std::string_view::npos || dot == 0) return std::nullopt;
    const int block = expertNumber(rest.substr(0, dot));
    if (block < 0) return std::nullopt;
    // Inkling wraps each depth's decoder block (model.mtp.layers.N.transformer_block.*; vLLM inkling_mtp.py
    // InklingMultiTokenPredictor), MiniMax its MTP layer (transformer_layer.*): inside, a decoder layer's naming.
    std::string_view inside = rest.substr(dot + 1);
    for (std::string_view wrapper : {"transformer_block.", "transformer_layer."})
        if (inside.starts_with(wrapper)) inside.remove_prefix(wrapper.size());
    return TensorPlace{block, inside};
}

Category outsideRole(std::string_view name)
{
    const int i = decidingRow(name, RoleScope::Outside);
    return i < 0 ? Category::Other : kRoles[static_cast<std::size_t>(i)].category;
}

} // namespace atlas
