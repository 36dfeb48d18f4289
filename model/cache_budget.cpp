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

std::uint64_t defaultContextTokens(const ModelConfig &config)
{
    return config.maxPositionEmbeddings ? static_cast<std::uint64_t>(*config.maxPositionEmbeddings)
                                        : kFallbackContextTokens;
}

CacheBudget computeCacheBudget(const Checkpoint &ckpt, const CheckpointAnalysis &a, const CacheOptions &opt)
{
    const ModelConfig &cfg = ckpt.config;
    CacheBudget c;
    c.kvDtype = opt.kvDtype;
    const auto kvLora = cfg.kvLoraRank ? cfg.kvLoraRank : a.diskKvLoraRank;
    const auto rope = cfg.qkRopeHeadDim ? cfg.qkRopeHeadDim : a.diskRopeDim;
    if (!kvLora || !rope) {
        c.reason =
            "not an MLA model: kv_lora_rank / qk_rope_head_dim are neither in config.json nor readable "
            "from the attention tensors";
        return c;
    }
    c.available = true;
    c.kvLoraRank = *kvLora;
    c.ropeDim = *rope;
    c.kvLayers = a.mainLayers;
    c.kvBytesPerLayer = kvBytesPerLayer(opt.kvDtype, c.kvLoraRank, c.ropeDim);
    c.kvBytesPerToken = static_cast<std::uint64_t>(c.kvLayers * c.kvBytesPerLayer);

    c.indexLayers = static_cast<std::int64_t>(a.indexShare.full.size());
    const auto headDim = cfg.indexHeadDim ? cfg.indexHeadDim : a.diskIndexHeadDim;
    if (headDim) {
        c.indexHeadDim = *headDim;
        c.indexEntryBytesReference = indexEntryBytesReference(*headDim);
        c.indexEntryBytes = opt.indexEntryBytes.value_or(indexEntryBytesPadded(*headDim));
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
    c.bytesPerToken = c.kvBytesPerToken + c.indexBytesPerToken;
    c.indexTopk = cfg.indexTopk;

    c.contextTokens = opt.contextTokens ? *opt.contextTokens : defaultContextTokens(cfg);
    const unsigned __int128 total = static_cast<unsigned __int128>(c.bytesPerToken) * c.contextTokens;
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
        return c;
    }
    c.totalBytes = static_cast<std::uint64_t>(total);
    if (c.indexTopk)
        c.sparseReadTokens =
            std::min<std::uint64_t>(static_cast<std::uint64_t>(*c.indexTopk), c.contextTokens);
    else
        c.sparseReadTokens = c.contextTokens;
    return c;
}

} // namespace atlas
