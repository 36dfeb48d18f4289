#pragma once

#include "analysis.h"

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
enum class CachePreset { Article, Vllm, VllmMtp, Atom };
std::string_view cachePresetName(CachePreset p); // "article", "vllm", "vllm-mtp", "atom"
std::optional<CachePreset> cachePresetFromName(std::string_view name);
std::string_view cachePresetDescription(CachePreset p);

struct CacheOptions
{
    KvDtype kvDtype = KvDtype::BF16;
    CachePreset preset = CachePreset::Article;
    std::optional<std::int64_t> indexEntryBytes; // default: the preset's (132 or 144)
    std::optional<std::uint64_t> contextTokens;  // default: defaultContextTokens()
};

// How a group of layers caches (domain.md section 7).
enum class AttentionKind { Mla, Full, Sliding, Linear };
std::string_view attentionKindName(AttentionKind k); // "mla", "full", "sliding", "linear"

struct AttentionLayers
{
    AttentionKind kind = AttentionKind::Full;
    std::int64_t layers = 0;
    std::uint64_t bytesPerTokenPerLayer = 0; // 0 for linear layers: their state does not grow
    std::optional<std::uint64_t> window;     // sliding layers hold at most this many tokens
    // Linear layers: the fixed state per sequence and layer (recurrent state + convolution window, BF16),
    // when config.json gives the linear_* heads and dims.
    std::optional<std::uint64_t> stateBytesPerLayer;
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
    std::uint64_t bytesPerToken = 0;
    std::uint64_t indexBytesPerTokenEveryLayer = 0;
    std::uint64_t contextTokens = 0;
    std::uint64_t totalBytes = 0;
    std::optional<std::int64_t> indexTopk;
    std::uint64_t sparseReadTokens = 0;     // min(index_topk, context): entries attention reads per query
    std::vector<AttentionLayers> attention; // the layers by attention kind (MLA, full, sliding, linear)
    std::int64_t kvWidth = 0;               // GQA: num_key_value_heads x head_dim
    // What linear-attention layers hold per sequence whatever the context (not in totalBytes): the sum
    // of their states, when known.
    std::optional<std::uint64_t> fixedStateBytes;
    bool mla() const { return kvLoraRank > 0; }
    // Bytes for one sequence at `context` tokens: every layer's bytes per token up to its window,
    // plus the index keys.
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

CacheBudget computeCacheBudget(const Checkpoint &checkpoint, const CheckpointAnalysis &analysis,
                               const CacheOptions &options);

} // namespace atlas
