#include "cache_budget.h"

namespace atlas {

std::string_view kvDtypeName(KvDtype k)
{
    switch (k) {
    case KvDtype::BF16:
        return "bf16";
    case KvDtype::FP8:
        return "fp8";
    case KvDtype::FP8_DS_MLA:
        return "fp8_ds_mla";
    }
    return "bf16";
}

std::string_view cachePresetName(CachePreset p)
{
    switch (p) {
    case CachePreset::Article:
        return "article";
    case CachePreset::Vllm:
        return "vllm";
    case CachePreset::VllmMtp:
        return "vllm-mtp";
    case CachePreset::Atom:
        return "atom";
    }
    return "";
}

std::optional<CachePreset> cachePresetFromName(std::string_view name)
{
    for (CachePreset p : {CachePreset::Article, CachePreset::Vllm, CachePreset::VllmMtp, CachePreset::Atom})
        if (cachePresetName(p) == name) return p;
    return std::nullopt;
}

std::string_view cachePresetDescription(CachePreset p)
{
    switch (p) {
    case CachePreset::Article:
        return "the reference article's accounting: index keys on the layers that own an indexer, 144-byte "
               "padded entries, no MTP layer";
    case CachePreset::Vllm:
        return "vLLM: index keys (128 FP8 + 4-byte scale = 132 B) only on the layers that own an indexer";
    case CachePreset::VllmMtp:
        return "vLLM with MTP speculative decoding: the MTP layer's latent and index keys too, 132 B";
    case CachePreset::Atom:
        return "ATOM: an index cache for every layer plus the draft (MTP) layer, 144 B, and the draft "
               "layer's latent";
    }
    return "";
}

std::optional<KvDtype> kvDtypeFromName(std::string_view name)
{
    for (KvDtype k : {KvDtype::BF16, KvDtype::FP8, KvDtype::FP8_DS_MLA})
        if (kvDtypeName(k) == name) return k;
    return std::nullopt;
}

std::int64_t indexEntryBytesReference(std::int64_t headDim)
{
    return headDim + 4 * ((headDim + 127) / 128);
}

std::int64_t indexEntryBytesPadded(std::int64_t headDim)
{
    return (indexEntryBytesReference(headDim) + 15) / 16 * 16;
}

std::int64_t kvBytesPerLayer(KvDtype dtype, std::int64_t kvLoraRank, std::int64_t ropeDim)
{
    switch (dtype) {
    case KvDtype::BF16:
        return (kvLoraRank + ropeDim) * 2;
    case KvDtype::FP8:
        return kvLoraRank + ropeDim;
    case KvDtype::FP8_DS_MLA:
        // FlashMLA: the latent in FP8, one F32 scale per 128 latent values, the rope part in BF16.
        return kvLoraRank + 4 * ((kvLoraRank + 127) / 128) + 2 * ropeDim;
    }
    return 0;
}

std::string_view attentionKindName(AttentionKind k)
{
    switch (k) {
    case AttentionKind::Mla:
        return "mla";
    case AttentionKind::Sliding:
        return "sliding";
    case AttentionKind::Linear:
        return "linear";
    case AttentionKind::Full:
        break;
    }
    return "full";
}

std::uint64_t defaultContextTokens(const ModelConfig &config)
{
    return config.maxPositionEmbeddings ? static_cast<std::uint64_t>(*config.maxPositionEmbeddings)
                                        : kFallbackContextTokens;
}

namespace {

unsigned __int128 exactBytesAt(const CacheBudget &c, std::uint64_t context)
{
    unsigned __int128 total = static_cast<unsigned __int128>(c.indexBytesPerToken) * context;
    for (const auto &g : c.attention) {
        const std::uint64_t tokens = g.window ? std::min(*g.window, context) : context;
        total += static_cast<unsigned __int128>(g.bytesPerTokenPerLayer) *
                 static_cast<std::uint64_t>(g.layers) * tokens;
    }
    return total;
}

} // namespace

std::uint64_t CacheBudget::bytesAt(std::uint64_t context) const
{
    const unsigned __int128 total = exactBytesAt(*this, context);
    return total > static_cast<unsigned __int128>(UINT64_MAX) ? UINT64_MAX
                                                              : static_cast<std::uint64_t>(total);
}

namespace {

// GQA / MQA / MHA: K and V per layer, 2 x num_key_value_heads x head_dim elements per token, each
// layer full, sliding (at most sliding_window tokens) or linear (a fixed state).
bool gqaBudget(const ModelConfig &cfg, const CheckpointAnalysis &a, const CacheOptions &opt, CacheBudget &c)
{
    std::int64_t width = 0;
    if (cfg.numAttentionHeads || cfg.numKeyValueHeads) {
        const std::int64_t heads = cfg.numAttentionHeads.value_or(*cfg.numKeyValueHeads);
        const std::int64_t kv = cfg.numKeyValueHeads.value_or(heads);
        const std::int64_t headDim = cfg.headDim      ? *cfg.headDim
                                     : cfg.hiddenSize ? *cfg.hiddenSize / heads
                                                      : 0;
        width = kv * headDim;
    }
    if (width == 0 && a.diskKvWidth) width = *a.diskKvWidth;
    if (width <= 0) return false;
    if (opt.kvDtype == KvDtype::FP8_DS_MLA) {
        c.kvDtypeMisfit = true;
        c.reason = "fp8_ds_mla is FlashMLA's layout for an MLA latent; this model's attention keeps K and V "
                   "(GQA), so only bf16 or fp8 apply";
        return true;
    }
    c.kvWidth = width;
    const std::uint64_t perLayer =
        2 * static_cast<std::uint64_t>(width) * (opt.kvDtype == KvDtype::FP8 ? 1 : 2);
    const int L = a.mainLayers;
    const bool typed = static_cast<int>(cfg.layerTypes.size()) == L;
    const bool allSliding = cfg.slidingWindow && cfg.useSlidingWindow.value_or(true) && !typed;
    std::int64_t full = 0, sliding = 0, linear = 0;
    for (int i = 0; i < L; ++i) {
        const std::string type = typed ? cfg.layerTypes[static_cast<std::size_t>(i)] : std::string();
        if (type == "sliding_attention" || allSliding)
            ++sliding;
        else if (type.find("linear") != std::string::npos || type == "mamba" || type == "recurrent")
            ++linear;
        else
            ++full;
    }
    if (sliding && !cfg.slidingWindow) { // layer_types names sliding layers but no window: count them full
        full += sliding;
        sliding = 0;
    }
    if (full) c.attention.push_back({AttentionKind::Full, full, perLayer, std::nullopt, std::nullopt});
    if (sliding)
        c.attention.push_back(
            {AttentionKind::Sliding, sliding, perLayer, static_cast<std::uint64_t>(*cfg.slidingWindow), std::nullopt});
    if (linear) {
        // Gated DeltaNet (Qwen3-Next): per sequence a recurrent state of value heads x key dim x value dim,
        // and a convolution window of (kernel - 1) x (2 x key heads x key dim + value heads x value dim)
        // (vLLM's gated_delta_net state shapes), in the model's BF16.
        std::optional<std::uint64_t> state;
        if (cfg.linearNumValueHeads && cfg.linearKeyHeadDim && cfg.linearValueHeadDim) {
            const auto vh = static_cast<std::uint64_t>(*cfg.linearNumValueHeads);
            const auto kd = static_cast<std::uint64_t>(*cfg.linearKeyHeadDim);
            const auto vd = static_cast<std::uint64_t>(*cfg.linearValueHeadDim);
            const auto kh = static_cast<std::uint64_t>(cfg.linearNumKeyHeads.value_or(*cfg.linearNumValueHeads));
            const auto kernel = static_cast<std::uint64_t>(cfg.linearConvKernelDim.value_or(1));
            // Within the config bounds (heads <= 2^16, dims <= 2^20, kernel <= 2^10) one layer's state
            // fits 58 bits; the sum over layers is checked.
            state = 2 * (vh * kd * vd + (kernel - 1) * (2 * kh * kd + vh * vd));
            std::uint64_t all = 0;
            if (!__builtin_mul_overflow(*state, static_cast<std::uint64_t>(linear), &all)) c.fixedStateBytes = all;
        }
        c.attention.push_back({AttentionKind::Linear, linear, 0, std::nullopt, state});
    }
    c.kvLayers = full + sliding;
    c.kvBytesPerLayer = static_cast<std::int64_t>(perLayer);
    c.kvBytesPerToken = static_cast<std::uint64_t>(full + sliding) * perLayer;
    c.available = true;
    return true;
}

// The totals at the chosen context, for every attention kind.
void finish(CacheBudget &c, const ModelConfig &cfg, const CacheOptions &opt)
{
    c.bytesPerToken = c.kvBytesPerToken + c.indexBytesPerToken;
    c.indexTopk = cfg.indexTopk;
    c.contextTokens = opt.contextTokens ? *opt.contextTokens : defaultContextTokens(cfg);
    const unsigned __int128 total = exactBytesAt(c, c.contextTokens);
    if (total > static_cast<unsigned __int128>(UINT64_MAX)) {
        // Not thrown: a config's max_position_embeddings is not the user's fault, and a view must
        // never see an exception. The command line turns a --context that overflows into a usage error.
        c.available = false;
        c.overflow = true;
        c.reason = "a context of " + std::to_string(c.contextTokens) + " tokens (" +
                   (opt.contextTokens           ? "asked for"
                    : cfg.maxPositionEmbeddings ? "max_position_embeddings"
                                                : "the default") +
                   ") at " + std::to_string(c.bytesPerToken) + " bytes per token overflows 64 bits";
        return;
    }
    c.totalBytes = static_cast<std::uint64_t>(total);
    c.sparseReadTokens =
        c.indexTopk ? std::min<std::uint64_t>(static_cast<std::uint64_t>(*c.indexTopk), c.contextTokens)
                    : c.contextTokens;
}

} // namespace

CacheBudget computeCacheBudget(const Checkpoint &ckpt, const CheckpointAnalysis &a, const CacheOptions &opt)
{
    const ModelConfig &cfg = ckpt.config;
    CacheBudget c;
    c.kvDtype = opt.kvDtype;
    c.preset = opt.preset;
    const auto kvLora = cfg.kvLoraRank ? cfg.kvLoraRank : a.diskKvLoraRank;
    const auto rope = cfg.qkRopeHeadDim ? cfg.qkRopeHeadDim : a.diskRopeDim;
    if (!kvLora || !rope) {
        if (gqaBudget(cfg, a, opt, c)) {
            if (c.kvDtypeMisfit) return c;
            finish(c, cfg, opt);
            return c;
        }
        c.reason = "no attention to cache: neither kv_lora_rank / qk_rope_head_dim (MLA) nor "
                   "num_attention_heads / num_key_value_heads / k_proj (GQA) say how wide K and V are";
        return c;
    }
    c.available = true;
    c.kvLoraRank = *kvLora;
    c.ropeDim = *rope;
    // The MTP (draft) layers cache too when an engine runs speculative decoding with them.
    const std::int64_t mtpLayers = a.layerCount - a.mainLayers;
    const bool withDraft = opt.preset == CachePreset::VllmMtp || opt.preset == CachePreset::Atom;
    c.kvLayers = a.mainLayers + (withDraft ? mtpLayers : 0);
    c.kvBytesPerLayer = kvBytesPerLayer(opt.kvDtype, c.kvLoraRank, c.ropeDim);
    c.kvBytesPerToken = static_cast<std::uint64_t>(c.kvLayers * c.kvBytesPerLayer);
    c.attention.push_back(
        {AttentionKind::Mla, c.kvLayers, static_cast<std::uint64_t>(c.kvBytesPerLayer), std::nullopt, std::nullopt});

    c.indexLayers = static_cast<std::int64_t>(a.indexShare.full.size());
    const bool indexed = c.indexLayers > 0;
    if (indexed && opt.preset == CachePreset::Atom) c.indexLayers = a.mainLayers + mtpLayers; // every layer
    if (indexed && opt.preset == CachePreset::VllmMtp)
        for (int i = a.mainLayers; i < a.layerCount; ++i)
            c.indexLayers += a.layers[static_cast<std::size_t>(i)].indexerWeights;
    const bool reference = opt.preset == CachePreset::Vllm || opt.preset == CachePreset::VllmMtp;
    const auto headDim = cfg.indexHeadDim ? cfg.indexHeadDim : a.diskIndexHeadDim;
    if (headDim) {
        c.indexHeadDim = *headDim;
        c.indexEntryBytesReference = indexEntryBytesReference(*headDim);
        c.indexEntryBytes = opt.indexEntryBytes.value_or(reference ? indexEntryBytesReference(*headDim)
                                                                   : indexEntryBytesPadded(*headDim));
    } else if (opt.indexEntryBytes) {
        c.indexEntryBytes = *opt.indexEntryBytes;
    } else if (c.indexLayers > 0) {
        c.available = false;
        c.reason = "the model has indexers but index_head_dim is neither in config.json nor readable from "
                   "self_attn.indexer.wk";
        return c;
    }
    if (c.indexLayers > 0 || a.indexShare.source != IndexShareSource::None) {
        c.indexBytesPerToken = static_cast<std::uint64_t>(c.indexLayers * c.indexEntryBytes);
        c.indexBytesPerTokenEveryLayer = static_cast<std::uint64_t>(a.mainLayers * c.indexEntryBytes);
    }
    finish(c, cfg, opt);
    return c;
}

} // namespace atlas
