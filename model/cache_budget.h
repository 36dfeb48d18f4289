#pragma once

#include "analysis.h"
#include "layer_kinds.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

enum class KvDtype { BF16, FP8, FP8_DS_MLA };
std::string_view kvDtypeName(KvDtype k);
std::optional<KvDtype> kvDtypeFromName(std::string_view name);

// What an engine allocates (read from their code; domain.md section 7):
// - Article: the reference article's accounting: index keys on the main layers that own an indexer,
//   144-byte padded entries; no MTP layer (the default, the figures the article prints);
// - Vllm: index keys (DeepseekV32IndexerCache: 128 FP8 + 4-byte scale = 132 B) on the layers that own
//   an indexer; VllmMtp adds the MTP layer, its latent and its index keys, as speculative decoding does;
// - Atom: an index cache for every layer plus the draft (MTP) layer, 144 B, and the draft layer's latent.
// - Reference: DeepSeek's reference implementation: 132-byte index entries, no MTP layer; on DeepSeek-V4,
//   its BF16 rows (a 512-dim K=V row is 1,024 B, an index row 256 B).
// On DeepSeek-V4, Vllm / VllmMtp are vLLM's FP8 layout (584-byte compressed rows, 132-byte index rows).
// - LlamaCpp: llama.cpp (src/llama-kv-cache.cpp, PR #19067 "support V-less cache"): an MLA layer keeps K only,
//   kv_lora_rank + rope values per token (V is a view of its first kv_lora_rank), the DSA indexer's keys
//   (llama_kv_cache_dsa's kv_lid: index_head_dim values) on the layers that own an indexer, both in the
//   --cache-type-k type; GQA layers K and V (-ctk, -ctv); no nextn (MTP) layer (llama_hparams::has_kv).
//   What a GGUF checkpoint is counted with unless another preset is asked for.
enum class CachePreset { Article, Vllm, VllmMtp, Atom, Reference, LlamaCpp };
std::string_view cachePresetName(CachePreset p); // "article", "vllm", "vllm-mtp", "atom", "reference", "llama.cpp"
std::optional<CachePreset> cachePresetFromName(std::string_view name);
std::string_view cachePresetDescription(CachePreset p);
// The same, for what this checkpoint caches: without DSA index keys the presets differ only in the MTP
// layer, and DeepSeek-V4's rows are named instead of MLA index entries.
enum class PresetContext { DsaIndexKeys, DeepSeekV4Rows, NoIndexKeys };
std::string_view cachePresetDescription(CachePreset p, PresetContext context);
struct CacheBudget;
// Which of those a budget is about: DeepSeek-V4's rows, DSA index keys, or neither.
PresetContext presetContextOf(const CacheBudget &c);

// The dtype of per-sequence states (recurrent states of KDA / Gated DeltaNet / Mamba-2, DeepSeek-V4's
// compressor states): FP32 by default, as vLLM keeps them; BF16 halves them. Convolution windows stay BF16.
enum class StateDtype { FP32, BF16 };
std::string_view stateDtypeName(StateDtype s); // "fp32", "bf16"
std::optional<StateDtype> stateDtypeFromName(std::string_view name);

struct CacheOptions
{
    KvDtype kvDtype = KvDtype::BF16;
    // Unset: FP32, or what the config declares for Mamba-2 (mamba_ssm_cache_dtype).
    std::optional<StateDtype> stateDtype;
    CachePreset preset = CachePreset::Article;
    std::optional<std::int64_t> indexEntryBytes; // default: the preset's (132 or 144)
    // llama.cpp's cache types (-ctk / -ctv: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1; common/arg.cpp
    // kv_cache_types), for the LlamaCpp preset.
    Dtype llamaCacheTypeK = Dtype::F16;
    Dtype llamaCacheTypeV = Dtype::F16;
    std::optional<std::uint64_t> contextTokens;  // default: defaultContextTokens()
};

// How a group of layers caches (domain.md sections 7 and 13).
enum class AttentionKind {
    Mla,               // the latent (and the shared RoPE key when qk_rope_head_dim > 0)
    Full,              // K and V of GQA / MQA / MHA
    Sliding,           // the same, up to the window
    IndexKeys,         // DSA index keys: one entry per token, or pooled per index_kpool tokens with a tail
    Kda,               // Kimi Delta Attention: short convolutions + a recurrent state, per sequence
    GatedDeltaNet,     // Qwen3-Next
    Mamba2,            // Nemotron-H
    Linear,            // a recurrent layer whose state the config does not size
    CompressedSparse,  // DeepSeek-V4 ratio 4: window + compressed rows + an indexer
    HeavilyCompressed, // DeepSeek-V4 ratio 128: window + compressed rows
    Window,            // DeepSeek-V4 ratio 0: the window only
};
// "mla", "full", "sliding", "index_keys", "kda", "gated_deltanet", "mamba2", "linear",
// "compressed_sparse", "heavily_compressed", "window"
std::string_view attentionKindName(AttentionKind k);

struct AttentionLayers
{
    AttentionKind kind = AttentionKind::Full;
    std::int64_t layers = 0;
    // Bytes per cached row and tokens per row: a layer holds floor(context / compression) rows (every
    // token its own row when compression is 1). 0 for recurrent layers: their state does not grow.
    std::uint64_t bytesPerTokenPerLayer = 0;
    std::uint64_t compression = 1;
    std::optional<std::uint64_t> window; // sliding layers hold at most this many tokens (per-token part)
    // What the layer holds per sequence whatever the context (recurrent and convolution states, a
    // compressor's state, DeepSeek-V4's window rows, a pooled index's tail), when known.
    std::optional<std::uint64_t> stateBytesPerLayer;
    std::string stateDtype; // the dtype of the recurrent / compressor part of the state ("fp32", "bf16")
    std::string note;       // what the figures are made of, in a phrase
    std::vector<int> layerIndices; // which layers (MTP layers after the main ones), for pipeline stages
    // How tensor parallelism divides this group's cache on each GPU (the mixer row's TpCacheSplit; the
    // index keys are one head), the KV heads it divides by (KvHeads: this group's own, MiMo-V2's sliding
    // layers have more than its full ones), and what every rank keeps whole (Replicated), in a phrase.
    TpCacheSplit tpSplit = TpCacheSplit::Replicated; // until finish() settles it: never an optimistic split
    std::uint64_t kvHeads = 0;
    std::string keptWhole;
    double bytesPerToken() const { return double(bytesPerTokenPerLayer) / double(compression); }
};

// Per-token KV (MLA latent, or K and V of GQA / MQA / MHA) and index-key cache costs.
struct CacheBudget
{
    bool available = false;
    std::string reason;         // why not available
    bool overflow = false;      // the total at this context does not fit 64 bits
    bool kvDtypeMisfit = false; // the KV dtype asked for does not apply to this attention (reason says why)
    KvDtype kvDtype = KvDtype::BF16;
    CachePreset preset = CachePreset::Article;
    Dtype llamaCacheTypeK = Dtype::F16, llamaCacheTypeV = Dtype::F16; // the LlamaCpp preset's
    std::string layoutNote; // how the preset applies when the model is not MLA (DeepSeek-V4's rows)
    std::int64_t kvLoraRank = 0;
    std::int64_t ropeDim = 0;
    std::int64_t kvLayers = 0;
    std::int64_t kvBytesPerLayer = 0;
    std::int64_t indexHeadDim = 0;
    std::int64_t indexLayers = 0;
    std::int64_t indexEntryBytes = 0;
    std::int64_t indexEntryBytesReference = 0; // DeepSeek reference / vLLM (unpadded)
    std::uint64_t kvBytesPerToken = 0;
    std::uint64_t indexBytesPerToken = 0;
    // What grows per token at long context: every layer without a window (rounded up when compressed
    // rows make it fractional; the exact figure keeps the fraction). Sliding layers are apart.
    std::uint64_t bytesPerToken = 0;
    double bytesPerTokenExact = 0;
    // Layers with a window: what they add per token until the window is full, and what they then hold
    // per sequence for good (gpt-oss-20b: 12 layers × 2,048 B up to 128 tokens, 3 MiB).
    double windowBytesPerToken = 0;
    std::uint64_t windowBytes = 0;
    std::uint64_t indexBytesPerTokenEveryLayer = 0;
    std::uint64_t contextTokens = 0;
    std::uint64_t totalBytes = 0;
    std::optional<std::int64_t> indexTopk;
    std::uint64_t sparseReadTokens = 0;     // min(index_topk, context): entries attention reads per query
    std::vector<AttentionLayers> attention; // the layers by attention kind (MLA, full, sliding, linear)
    std::int64_t kvWidth = 0;               // GQA: num_key_value_heads x head_dim
    // What the layers hold per sequence whatever the context (in totalBytes): the sum of their states, when
    // any layer has one.
    std::optional<std::uint64_t> fixedStateBytes;
    StateDtype stateDtype = StateDtype::FP32;
    bool mla() const { return kvLoraRank > 0; }
    // Bytes for one sequence at `context` tokens: every layer's rows (up to its window, one per
    // `compression` tokens), the index keys, and the fixed state.
    std::uint64_t bytesAt(std::uint64_t context) const;
};

// Index-key entry: head_dim FP8 bytes + a 4-byte scale per 128, and that padded to 16 bytes.
std::int64_t indexEntryBytesReference(std::int64_t headDim);
std::int64_t indexEntryBytesPadded(std::int64_t headDim);
std::int64_t kvBytesPerLayer(KvDtype dtype, std::int64_t kvLoraRank, std::int64_t ropeDim);

// The context a cache figure is given at unless asked otherwise: max_position_embeddings, or,
// when the config does not say, 131,072 tokens (and the report says which).
inline constexpr std::uint64_t kFallbackContextTokens = 131072;
std::uint64_t defaultContextTokens(const ModelConfig &config);

// llama.cpp's words for its cache types ("f16", "q8_0") and back; nullopt for a type -ctk does not take.
std::optional<Dtype> llamaCacheTypeFromName(std::string_view name);
std::string llamaCacheTypeName(Dtype type);
// Bytes of a row of n values in a ggml type (ggml_row_size); n must fill its blocks.
std::uint64_t ggmlRowBytes(Dtype type, std::uint64_t n);

// A GGUF checkpoint is counted as llama.cpp caches it when the preset is the default (Article, whose
// 144-byte entries describe safetensors DSA figures).
CacheBudget computeCacheBudget(const Checkpoint &checkpoint, const CheckpointAnalysis &analysis,
                               const CacheOptions &options);
// The options that made a budget (KV dtype, preset, state dtype, index entry, context): the same cache again
// for another context or another GPU.
CacheOptions cacheOptionsOf(const CacheBudget &budget);
// The cache a budget counts, short enough for a card and in words a user knows: "vLLM · BF16 latent ·
// 132 B index keys", "DeepSeek's reference · BF16 rows", "the source article's count · FP8 K/V".
std::string cacheShortWords(const CacheBudget &budget);

} // namespace atlas
