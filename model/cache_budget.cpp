#include "cache_budget.h"

#include <cctype>

#include "report.h"

#include <algorithm>
#include <cmath>
#include <map>

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
    case CachePreset::Reference:
        return "reference";
    case CachePreset::LlamaCpp:
        return "llama.cpp";
    }
    return "";
}

std::string_view stateDtypeName(StateDtype s)
{
    return s == StateDtype::BF16 ? "bf16" : "fp32";
}

std::optional<StateDtype> stateDtypeFromName(std::string_view name)
{
    if (name == "fp32") return StateDtype::FP32;
    if (name == "bf16") return StateDtype::BF16;
    return std::nullopt;
}

std::optional<CachePreset> cachePresetFromName(std::string_view name)
{
    for (CachePreset p :
         {CachePreset::Article, CachePreset::Vllm, CachePreset::VllmMtp, CachePreset::Atom, CachePreset::Reference,
          CachePreset::LlamaCpp})
        if (cachePresetName(p) == name) return p;
    if (name == "llama-cpp" || name == "llamacpp") return CachePreset::LlamaCpp;
    return std::nullopt;
}

std::optional<Dtype> llamaCacheTypeFromName(std::string_view name)
{
    static constexpr std::pair<std::string_view, Dtype> kTypes[] = {
        {"f32", Dtype::F32},   {"f16", Dtype::F16},   {"bf16", Dtype::BF16},     {"q8_0", Dtype::Q8_0}, {"q4_0", Dtype::Q4_0},
        {"q4_1", Dtype::Q4_1}, {"iq4_nl", Dtype::IQ4_NL}, {"q5_0", Dtype::Q5_0}, {"q5_1", Dtype::Q5_1},
    };
    for (const auto &[n, t] : kTypes)
        if (n == name) return t;
    return std::nullopt;
}

std::string llamaCacheTypeName(Dtype type)
{
    std::string s(dtypeName(type));
    for (auto &ch : s)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

std::uint64_t ggmlRowBytes(Dtype type, std::uint64_t n)
{
    const DtypeBlock b = dtypeBlock(type);
    return (n + b.elements - 1) / b.elements * b.bytes;
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
    case CachePreset::Reference:
        return "DeepSeek's reference implementation: 132-byte index entries, no MTP layer; on DeepSeek-V4 its "
               "BF16 rows (1,024 B a compressed or window row, 256 B an index row)";
    case CachePreset::LlamaCpp:
        return "llama.cpp: MLA keeps K only (latent + RoPE key; V a view of it), the indexer's keys on the layers "
               "that own one, in the -ctk type; no nextn (MTP) layer";
    }
    return "";
}

std::string_view cachePresetDescription(CachePreset p, PresetContext context)
{
    if (context == PresetContext::DeepSeekV4Rows) switch (p) {
        case CachePreset::Article:
        case CachePreset::Reference:
            return "DeepSeek's reference implementation: BF16 rows (1,024 B a compressed or window row, 256 B an "
                   "index row), no MTP layer";
        case CachePreset::Vllm:
            return "vLLM: FP8 rows (584 B a row, 132 B an index row), no MTP layer";
        case CachePreset::VllmMtp:
            return "vLLM with MTP speculative decoding: FP8 rows, the MTP layer's too";
        case CachePreset::Atom:
            return "ATOM: the draft (MTP) layer's cache too";
        case CachePreset::LlamaCpp:
            return "llama.cpp: DeepSeek-V4's rows as its -ctk type holds them, no MTP layer";
        }
    if (context == PresetContext::NoIndexKeys) switch (p) {
        case CachePreset::Article:
            return "the reference article's accounting: every layer's KV, no MTP layer";
        case CachePreset::Vllm:
            return "vLLM: every layer's KV, no MTP layer";
        case CachePreset::VllmMtp:
            return "vLLM with MTP speculative decoding: the MTP layer's KV too";
        case CachePreset::Atom:
            return "ATOM: the draft (MTP) layer's KV too";
        case CachePreset::Reference:
            return "the reference implementation: every layer's KV, no MTP layer";
        case CachePreset::LlamaCpp:
            return "llama.cpp: every layer's K in the -ctk type (MLA: V a view of K; GQA: V in the -ctv type), no "
                   "nextn (MTP) layer";
        }
    return cachePresetDescription(p);
}

PresetContext presetContextOf(const CacheBudget &c)
{
    if (!c.layoutNote.empty()) return PresetContext::DeepSeekV4Rows;
    return c.indexBytesPerTokenEveryLayer > 0 ? PresetContext::DsaIndexKeys : PresetContext::NoIndexKeys;
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
    case AttentionKind::IndexKeys:
        return "index_keys";
    case AttentionKind::Kda:
        return "kda";
    case AttentionKind::GatedDeltaNet:
        return "gated_deltanet";
    case AttentionKind::Mamba2:
        return "mamba2";
    case AttentionKind::CompressedSparse:
        return "compressed_sparse";
    case AttentionKind::HeavilyCompressed:
        return "heavily_compressed";
    case AttentionKind::Window:
        return "window";
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
    unsigned __int128 total = 0;
    for (const auto &g : c.attention) {
        const std::uint64_t tokens = g.window ? std::min(*g.window, context) : context;
        const std::uint64_t rows = tokens / std::max<std::uint64_t>(g.compression, 1);
        const auto layers = static_cast<std::uint64_t>(g.layers);
        total += static_cast<unsigned __int128>(g.bytesPerTokenPerLayer) * layers * rows;
        if (g.stateBytesPerLayer) total += static_cast<unsigned __int128>(*g.stateBytesPerLayer) * layers;
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

std::uint64_t u(std::int64_t v)
{
    return static_cast<std::uint64_t>(v);
}

// The dtype the recurrent part of a state is kept in: what was asked, else what the config declares
// (mamba_ssm_cache_dtype), else FP32 as vLLM keeps it.
StateDtype stateDtypeFor(const ModelConfig &cfg, const CacheOptions &opt, bool mamba)
{
    if (opt.stateDtype) return *opt.stateDtype;
    if (mamba && (cfg.mambaSsmCacheDtype == "bfloat16" || cfg.mambaSsmCacheDtype == "float16"))
        return StateDtype::BF16;
    return StateDtype::FP32;
}

std::uint64_t stateElementBytes(StateDtype d)
{
    return d == StateDtype::FP32 ? 4 : 2;
}

// A group of layers as the budget builds it; its TP split is settled in finish().
AttentionLayers makeGroup(AttentionKind kind, std::int64_t layers, std::uint64_t bytesPerTokenPerLayer,
                          std::uint64_t compression, std::optional<std::uint64_t> window,
                          std::optional<std::uint64_t> state, std::string stateDtype, std::string note,
                          std::vector<int> at)
{
    AttentionLayers g;
    g.kind = kind;
    g.layers = layers;
    g.bytesPerTokenPerLayer = bytesPerTokenPerLayer;
    g.compression = compression;
    g.window = window;
    g.stateBytesPerLayer = state;
    g.stateDtype = std::move(stateDtype);
    g.note = std::move(note);
    g.layerIndices = std::move(at);
    return g;
}


// Recurrent layers (KDA, Gated DeltaNet, Mamba-2): a fixed state per sequence, convolution windows in
// BF16 and the recurrent state in the state dtype (domain.md section 13; vLLM's kda, gated_delta_net and
// mamba_mixer2 state shapes).
void recurrentGroups(const ModelConfig &cfg, const CheckpointAnalysis &a, const CacheOptions &opt, CacheBudget &c)
{
    std::int64_t kda = 0, gdn = 0, mamba = 0, other = 0;
    std::vector<int> kdaAt, gdnAt, mambaAt, otherAt;
    const bool mambaDims = cfg.mambaNumHeads && cfg.mambaHeadDim && cfg.ssmStateSize;
    for (int i = 0; i < a.mainLayers; ++i) {
        switch (a.layers[static_cast<std::size_t>(i)].mixer) {
        case MixerKind::Mamba2:
            (mambaDims ? mamba : other) += 1;
            (mambaDims ? mambaAt : otherAt).push_back(i);
            break;
        case MixerKind::Kda:
            ++kda;
            kdaAt.push_back(i);
            break;
        case MixerKind::GatedDeltaNet:
            ++gdn;
            gdnAt.push_back(i);
            break;
        case MixerKind::Linear:
            ++other;
            otherAt.push_back(i);
            break;
        default:
            break;
        }
    }
    if (kda) {
        const StateDtype sd = stateDtypeFor(cfg, opt, false);
        const auto h = u(*cfg.kdaNumHeads), d = u(*cfg.kdaHeadDim), k = u(cfg.kdaConvKernel.value_or(4));
        const std::uint64_t conv = 3 * h * d * (k - 1) * 2, rec = h * d * d * stateElementBytes(sd);
        c.attention.push_back(makeGroup(AttentionKind::Kda, kda, 0, 1, std::nullopt, conv + rec, std::string(stateDtypeName(sd)),
                               "q, k, v short convolutions " + groupDigits(conv) + " B (BF16) + recurrent state " +
                                   groupDigits(rec) + " B", std::move(kdaAt)));
    }
    if (gdn) {
        const StateDtype sd = stateDtypeFor(cfg, opt, false);
        const auto vh = u(*cfg.linearNumValueHeads), kd = u(*cfg.linearKeyHeadDim), vd = u(*cfg.linearValueHeadDim);
        const auto kh = u(cfg.linearNumKeyHeads.value_or(*cfg.linearNumValueHeads));
        const auto k = u(cfg.linearConvKernelDim.value_or(4));
        const std::uint64_t conv = (2 * kh * kd + vh * vd) * (k - 1) * 2, rec = vh * vd * kd * stateElementBytes(sd);
        c.attention.push_back(makeGroup(AttentionKind::GatedDeltaNet, gdn, 0, 1, std::nullopt, conv + rec,
                               std::string(stateDtypeName(sd)),
                               "convolution " + groupDigits(conv) + " B (BF16) + recurrent state " + groupDigits(rec) + " B", std::move(gdnAt)));
    }
    if (mamba) {
        const StateDtype sd = stateDtypeFor(cfg, opt, true);
        const auto h = u(*cfg.mambaNumHeads), d = u(*cfg.mambaHeadDim), n = u(*cfg.ssmStateSize);
        const auto g = u(cfg.mambaGroups.value_or(1)), k = u(cfg.mambaConvKernel.value_or(4));
        const std::uint64_t conv = (h * d + 2 * g * n) * (k - 1) * 2, rec = h * d * n * stateElementBytes(sd);
        c.attention.push_back(makeGroup(AttentionKind::Mamba2, mamba, 0, 1, std::nullopt, conv + rec,
                               std::string(stateDtypeName(sd)),
                               "convolution " + groupDigits(conv) + " B (BF16) + SSM state " + groupDigits(rec) + " B", std::move(mambaAt)));
    }
    if (other) {
        c.attention.push_back(makeGroup(AttentionKind::Linear, other, 0, 1, std::nullopt, std::nullopt, "",
                               "a recurrent state whose size the config does not give", std::move(otherAt)));
    }
}

// Layers with softmax attention: the main layers that are neither recurrent nor without attention.
std::vector<int> attentionLayerList(const CheckpointAnalysis &a)
{
    std::vector<int> out;
    for (int i = 0; i < a.mainLayers; ++i) {
        const MixerKind m = a.layers[static_cast<std::size_t>(i)].mixer;
        if (!isRecurrent(m) && m != MixerKind::None) out.push_back(i);
    }
    return out;
}

// GQA / MQA / MHA: K and V per layer, 2 x num_key_value_heads x head_dim elements per token, each
// layer full or sliding (at most sliding_window tokens); recurrent layers apart.
bool gqaBudget(const ModelConfig &cfg, const CheckpointAnalysis &a, const CacheOptions &opt, CacheBudget &c)
{
    // K and V widths per token and layer: KV heads × K's head dim, and × V's (v_head_dim when the
    // config gives one: MiMo-V2 caches 192-wide keys and 128-wide values, vLLM mimo_v2_flash.py
    // MiMoV2Attention builds its cache from head_dim and v_head_dim apart).
    std::int64_t width = 0, kWidth = 0, vWidth = 0;
    std::int64_t kv = 0;
    if (cfg.numAttentionHeads || cfg.numKeyValueHeads) {
        const std::int64_t heads = cfg.numAttentionHeads.value_or(*cfg.numKeyValueHeads);
        kv = cfg.numKeyValueHeads.value_or(heads);
        const std::int64_t headDim = cfg.headDim      ? *cfg.headDim
                                     : cfg.hiddenSize ? *cfg.hiddenSize / heads
                                                      : 0;
        width = kv * headDim;
        kWidth = width;
        vWidth = kv * cfg.vHeadDim.value_or(headDim);
    }
    if (width == 0 && a.diskKvWidth) width = kWidth = vWidth = *a.diskKvWidth;
    if (width <= 0) return false;
    if (opt.kvDtype == KvDtype::FP8_DS_MLA) {
        c.kvDtypeMisfit = true;
        c.reason = "fp8_ds_mla is FlashMLA's layout for an MLA latent; this model's attention keeps K and V "
                   "(GQA), so only bf16 or fp8 apply";
        return true;
    }
    c.kvWidth = width;
    const std::uint64_t element = opt.kvDtype == KvDtype::FP8 ? 1 : 2;
    const bool llama = opt.preset == CachePreset::LlamaCpp;
    const std::uint64_t perLayer = llama ? ggmlRowBytes(opt.llamaCacheTypeK, u(kWidth)) + ggmlRowBytes(opt.llamaCacheTypeV, u(vWidth))
                                         : (u(kWidth) + u(vWidth)) * element;
    // Sliding layers with heads of their own (MiMo-V2's swa_* keys), else the same as the full ones.
    std::uint64_t perSlidingLayer = perLayer;
    std::int64_t slidingKv = kv;
    if (cfg.swaNumKeyValueHeads || cfg.swaHeadDim || cfg.swaVHeadDim) {
        const std::int64_t swaKv = cfg.swaNumKeyValueHeads.value_or(kv);
        const std::int64_t swaK = cfg.swaHeadDim.value_or(kv ? kWidth / kv : 0);
        const std::int64_t swaV = cfg.swaVHeadDim.value_or(cfg.swaHeadDim ? swaK : (kv ? vWidth / kv : 0));
        if (swaKv > 0 && swaK > 0 && swaV > 0) {
            perSlidingLayer = u(swaKv) * (u(swaK) + u(swaV)) * element;
            slidingKv = swaKv;
        }
    }
    const int L = a.mainLayers;
    std::int64_t full = 0, sliding = 0;
    std::vector<int> fullAt, slidingAt;
    // Sliding layers are those the analysis decided slide (a window given); a schedule that names sliding
    // layers without a window has them full (decideMixers).
    for (int i = 0; i < L; ++i) {
        const MixerKind m = a.layers[static_cast<std::size_t>(i)].mixer;
        if (isRecurrent(m) || m == MixerKind::None) continue;
        if (m == MixerKind::Sliding) {
            ++sliding;
            slidingAt.push_back(i);
        } else {
            ++full;
            fullAt.push_back(i);
        }
    }
    // Inkling's short convolutions keep their last kernel - 1 inputs per sequence: K and V (the layer's KV
    // width each) and the attention and MLP outputs (the hidden width each), BF16 (TensorRT-LLM
    // InklingConvStateCache; vLLM TMLStateDType conv bfloat16).
    auto convState = [&](std::uint64_t kvWidth) -> std::optional<std::uint64_t> {
        if (!cfg.shortConvKernel || !cfg.hiddenSize) return std::nullopt;
        return (u(*cfg.shortConvKernel) - 1) * (2 * kvWidth + 2 * u(*cfg.hiddenSize)) * 2;
    };
    // One group of softmax layers, its short-convolution state (when the model has one) said in its note.
    auto addGroup = [&](AttentionKind kind, std::int64_t n, std::uint64_t bytes, std::optional<std::uint64_t> window,
                        std::uint64_t kvWidth, std::uint64_t kvHeads, std::string note, std::vector<int> at) {
        const std::optional<std::uint64_t> st = convState(kvWidth);
        if (st) note += "; short-convolution state " + groupDigits(*st) + " B per sequence";
        c.attention.push_back(makeGroup(kind, n, bytes, 1, window, st, st ? "bf16" : "", std::move(note), std::move(at)));
        c.attention.back().kvHeads = kvHeads;
    };
    if (full) addGroup(AttentionKind::Full, full, perLayer, std::nullopt, u(kWidth), u(kv), "K and V", std::move(fullAt));
    if (sliding)
        addGroup(AttentionKind::Sliding, sliding, perSlidingLayer, u(*cfg.slidingWindow), perSlidingLayer / element / 2,
                 u(slidingKv), "K and V of the last " + groupDigits(u(*cfg.slidingWindow)) + " tokens", std::move(slidingAt));
    // A sparse GQA layer's indexer keeps one index key per token beside K and V (MiniMax-M3: vLLM
    // minimax_m3 common/indexer.py MiniMaxM3IndexerCache, "one index-key vector per token", one head of
    // sparse_index_dim; Qwen3.8-Flash-Next: transformers Qwen4ExpTextQSAIndexer keeps the raw keys, one head
    // of indexer_head_dim). BF16, or FP8 with a 4-byte scale.
    if (!a.indexShare.full.empty() && cfg.indexHeadDim) {
        const std::uint64_t entry = opt.kvDtype == KvDtype::FP8 ? u(indexEntryBytesReference(*cfg.indexHeadDim))
                                                                 : 2 * u(*cfg.indexHeadDim);
        c.indexLayers = static_cast<std::int64_t>(a.indexShare.full.size());
        c.indexHeadDim = *cfg.indexHeadDim;
        c.indexEntryBytes = static_cast<std::int64_t>(entry);
        c.indexEntryBytesReference = indexEntryBytesReference(*cfg.indexHeadDim);
        c.indexBytesPerToken = u(c.indexLayers) * entry;
        c.attention.push_back(makeGroup(AttentionKind::IndexKeys, c.indexLayers, entry, 1, std::nullopt, std::nullopt, "",
                                        groupDigits(entry) + " B per entry, one per token", a.indexShare.full));
    }
    recurrentGroups(cfg, a, opt, c);
    c.kvLayers = full + sliding;
    c.kvBytesPerLayer = static_cast<std::int64_t>(perLayer);
    // What grows at long context: the full layers; the sliding ones stop at their window (windowBytes).
    c.kvBytesPerToken = u(full) * perLayer;
    c.available = true;
    return true;
}

// DeepSeek-V4 (domain.md section 13): every layer keeps a window of sliding_window uncompressed rows of
// its one K=V head; ratio 4 adds a row per 4 tokens and an index row per 4 tokens, ratio 128 a row per
// 128 tokens; compressors keep a state per sequence. Rows are BF16 in the reference implementation,
// vLLM's FP8 layout otherwise (584-byte rows: 448 FP8 + 64 BF16 RoPE + 7 scales + 1 pad; 132-byte index rows).
void v4Budget(const ModelConfig &cfg, const CheckpointAnalysis &a, const CacheOptions &opt, CacheBudget &c)
{
    const auto hd = u(cfg.headDim.value_or(512)), rope = u(cfg.qkRopeHeadDim.value_or(64));
    const auto id = u(cfg.indexHeadDim.value_or(128));
    const auto window = u(cfg.slidingWindow.value_or(128));
    const bool fp8 = opt.preset == CachePreset::Vllm || opt.preset == CachePreset::VllmMtp ||
                     opt.kvDtype != KvDtype::BF16;
    const std::uint64_t nope = hd > rope ? hd - rope : 0;
    const std::uint64_t row = fp8 ? (nope + 2 * rope + (nope + 63) / 64 + 7) / 8 * 8 : 2 * hd;
    const std::uint64_t indexRow = fp8 ? u(indexEntryBytesReference(static_cast<std::int64_t>(id))) : 2 * id;
    const StateDtype sd = stateDtypeFor(cfg, opt, false);
    const std::uint64_t sb = stateElementBytes(sd);
    const bool withDraft = opt.preset == CachePreset::VllmMtp || opt.preset == CachePreset::Atom;
    const std::size_t layers = static_cast<std::size_t>(a.mainLayers) +
                               (withDraft ? static_cast<std::size_t>(a.layerCount - a.mainLayers) : 0);
    // By ratio and whether the layer is the sparse kind (its own indexer): layer_types says, else ratio 4.
    // DeepSeek-V4.1 (CSA2): only the kv_source_layer_ids layers store rows (and the index keys, which come
    // from their compressor's latent); the layers after each read its rows and keep their window only
    // (ik_llama.cpp deepseek41: reader layers alias their source's cache; ATOM allocates pages for the
    // owners alone). Its compressors do not overlap their windows as V4's ratio 4 does.
    const bool csa2 = !cfg.kvSourceLayers.empty();
    // A compressed layer before the first source has none to read: it stores its own rows.
    const std::int64_t firstSource =
        csa2 ? *std::min_element(cfg.kvSourceLayers.begin(), cfg.kvSourceLayers.end()) : 0;
    std::map<std::pair<std::uint64_t, bool>, std::vector<int>> byRatio;
    std::vector<int> readers;
    for (std::size_t i = 0; i < layers && i < cfg.compressRatios.size(); ++i) {
        const bool sparse = i < cfg.layerTypes.size() && static_cast<int>(i) < a.mainLayers
                                ? cfg.layerTypes[i] == "compressed_sparse_attention"
                                : cfg.compressRatios[i] == 4;
        if (csa2 && cfg.compressRatios[i] > 0 && static_cast<std::int64_t>(i) > firstSource &&
            std::find(cfg.kvSourceLayers.begin(), cfg.kvSourceLayers.end(), static_cast<std::int64_t>(i)) ==
                cfg.kvSourceLayers.end()) {
            readers.push_back(static_cast<int>(i));
            byRatio[{0, false}].push_back(static_cast<int>(i)); // its window only
            continue;
        }
        byRatio[{u(cfg.compressRatios[i]), sparse && cfg.compressRatios[i] > 0}].push_back(static_cast<int>(i));
    }
    for (auto &[key, at] : byRatio)
        std::sort(at.begin(), at.end());
    const std::uint64_t windowBytes = window * row;
    c.layoutNote = fp8 ? "DeepSeek-V4 in vLLM's FP8 layout: " + groupDigits(row) + "-byte rows (FP8 latent, BF16 RoPE, "
                         "scales), " + groupDigits(indexRow) + "-byte index rows"
                       : "DeepSeek-V4 in the reference implementation's BF16: " + groupDigits(row) + "-byte rows, " +
                             groupDigits(indexRow) + "-byte index rows";
    const std::string rowWords = fp8 ? " (FP8 rows of " + groupDigits(row) + " B)" : " (BF16 rows of " + groupDigits(row) + " B)";
    for (const auto &[key, at] : byRatio) {
        const auto [ratio, sparse] = key;
        const auto n = static_cast<std::int64_t>(at.size());
        AttentionLayers g;
        g.layers = n;
        g.layerIndices = at;
        g.window = std::nullopt; // the window rows are in the state; the compressed rows grow unbounded
        g.stateDtype = std::string(stateDtypeName(sd));
        if (ratio == 0) {
            g.kind = AttentionKind::Window;
            g.stateBytesPerLayer = windowBytes;
            g.note = groupDigits(window) + "-row window " + groupDigits(windowBytes) + " B" + rowWords;
            if (!readers.empty())
                g.note += "; " + groupDigits(readers.size()) +
                          " of these layers read the compressed rows of a kv_source_layer_ids layer";
        } else if (sparse) {
            // V4's compressor overlaps its windows (twice the width), and so does the indexer's; V4.1's do not.
            const std::uint64_t span = csa2 ? ratio : 2 * ratio;
            const std::uint64_t comp = 2 * span * (2 * hd) * sb, indexComp = 2 * span * (2 * id) * sb;
            g.kind = AttentionKind::CompressedSparse;
            g.bytesPerTokenPerLayer = row + indexRow;
            g.compression = ratio;
            g.stateBytesPerLayer = windowBytes + comp + indexComp;
            g.note = "a " + groupDigits(row) + " B row and a " + groupDigits(indexRow) + " B index row per " + groupDigits(ratio) +
                     " tokens; window " + groupDigits(windowBytes) + " B + compressor states " + groupDigits(comp) + " + " +
                     groupDigits(indexComp) + " B";
            c.indexLayers += n;
            c.indexEntryBytes = static_cast<std::int64_t>(indexRow);
            c.indexHeadDim = static_cast<std::int64_t>(id);
        } else {
            const std::uint64_t comp = 2 * ratio * hd * sb;
            g.kind = AttentionKind::HeavilyCompressed;
            g.bytesPerTokenPerLayer = row;
            g.compression = ratio;
            g.stateBytesPerLayer = windowBytes + comp;
            g.note = "a " + groupDigits(row) + " B row per " + groupDigits(ratio) + " tokens; window " + groupDigits(windowBytes) +
                     " B + compressor state " + groupDigits(comp) + " B";
        }
        c.attention.push_back(std::move(g));
    }
    std::stable_sort(c.attention.begin(), c.attention.end(),
                     [](const AttentionLayers &x, const AttentionLayers &y) { return x.kind < y.kind; });
    c.kvLayers = static_cast<std::int64_t>(std::min(layers, cfg.compressRatios.size()));
    c.kvBytesPerLayer = static_cast<std::int64_t>(row);
    c.available = true;
}

// How TP divides a group's cache: its mixer row's rule (layer_kinds.cpp); the index keys are one head per
// token, kept whole on every rank as the MLA latent is (vLLM DeepseekV32IndexerCache: one head).
void settleTpSplit(AttentionLayers &g)
{
    switch (g.kind) {
    case AttentionKind::Mla: g.tpSplit = mixerKind(MixerKind::Mla).tpCache; g.keptWhole = "the MLA latent"; return;
    case AttentionKind::IndexKeys: g.tpSplit = TpCacheSplit::Replicated; g.keptWhole = "the index keys"; return;
    case AttentionKind::Full: g.tpSplit = mixerKind(MixerKind::Full).tpCache; return;
    case AttentionKind::Sliding: g.tpSplit = mixerKind(MixerKind::Sliding).tpCache; return;
    case AttentionKind::Kda: g.tpSplit = mixerKind(MixerKind::Kda).tpCache; return;
    case AttentionKind::GatedDeltaNet: g.tpSplit = mixerKind(MixerKind::GatedDeltaNet).tpCache; return;
    case AttentionKind::Mamba2: g.tpSplit = mixerKind(MixerKind::Mamba2).tpCache; return;
    case AttentionKind::Linear: g.tpSplit = mixerKind(MixerKind::Linear).tpCache; return;
    case AttentionKind::Window: g.tpSplit = mixerKind(MixerKind::Window).tpCache; break;
    case AttentionKind::CompressedSparse: g.tpSplit = mixerKind(MixerKind::CompressedSparse).tpCache; break;
    case AttentionKind::HeavilyCompressed: g.tpSplit = mixerKind(MixerKind::HeavilyCompressed).tpCache; break;
    }
    g.keptWhole = "DeepSeek-V4's rows (one K=V head)";
}

// The totals at the chosen context, for every attention kind.
void finish(CacheBudget &c, const ModelConfig &cfg, const CacheOptions &opt)
{
    for (auto &g : c.attention) settleTpSplit(g);
    c.bytesPerTokenExact = 0;
    bool anyState = false;
    unsigned __int128 state = 0, window = 0;
    c.windowBytesPerToken = 0;
    for (const auto &g : c.attention) {
        // A layer with a window stops growing at it: its rows are apart from what grows per token.
        if (g.window) {
            c.windowBytesPerToken += double(g.layers) * g.bytesPerToken();
            window += static_cast<unsigned __int128>(*g.window / std::max<std::uint64_t>(g.compression, 1)) *
                      g.bytesPerTokenPerLayer * u(g.layers);
        } else {
            c.bytesPerTokenExact += double(g.layers) * g.bytesPerToken();
        }
        if (g.stateBytesPerLayer) {
            anyState = true;
            state += static_cast<unsigned __int128>(*g.stateBytesPerLayer) * u(g.layers);
        }
    }
    if (anyState && state <= static_cast<unsigned __int128>(UINT64_MAX))
        c.fixedStateBytes = static_cast<std::uint64_t>(state);
    c.windowBytes = window <= static_cast<unsigned __int128>(UINT64_MAX) ? static_cast<std::uint64_t>(window) : UINT64_MAX;
    c.stateDtype = opt.stateDtype.value_or(StateDtype::FP32);
    for (const auto &g : c.attention)
        if (g.stateDtype == "bf16") c.stateDtype = StateDtype::BF16;
    // Whole bytes per token: exact when every compressed row divides (DeepSeek-V4 in BF16), else
    // rounded up to the next byte (bytesPerTokenExact keeps the fraction).
    bool integral = true;
    unsigned __int128 sum = 0;
    for (const auto &g : c.attention) {
        if (g.window) continue;
        const std::uint64_t per = std::max<std::uint64_t>(g.compression, 1);
        integral = integral && g.bytesPerTokenPerLayer % per == 0;
        sum += static_cast<unsigned __int128>(g.bytesPerTokenPerLayer / per) * u(g.layers);
    }
    if (integral && sum <= static_cast<unsigned __int128>(UINT64_MAX))
        c.bytesPerToken = static_cast<std::uint64_t>(sum);
    else
        c.bytesPerToken = static_cast<std::uint64_t>(std::ceil(c.bytesPerTokenExact));
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
    if (ckpt.format == CheckpointFormat::Gguf && opt.preset == CachePreset::Article) {
        CacheOptions llama = opt;
        llama.preset = CachePreset::LlamaCpp;
        return computeCacheBudget(ckpt, a, llama);
    }
    c.kvDtype = opt.kvDtype;
    c.preset = opt.preset;
    c.llamaCacheTypeK = opt.llamaCacheTypeK;
    c.llamaCacheTypeV = opt.llamaCacheTypeV;
    const bool llama = opt.preset == CachePreset::LlamaCpp;
    // DeepSeek-V4: compressed attention, its own accounting.
    if (!cfg.compressRatios.empty() && static_cast<int>(cfg.compressRatios.size()) >= a.mainLayers) {
        v4Budget(cfg, a, opt, c);
        finish(c, cfg, opt);
        return c;
    }
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
    // Hybrids (GLM-5.3-Flash, Kimi-Linear): only the attention layers keep a latent.
    const std::vector<int> attentionAt = attentionLayerList(a); // softmax-attention main layers
    const auto attentionCount = static_cast<std::int64_t>(attentionAt.size());
    c.kvLayers = attentionCount + (withDraft ? mtpLayers : 0);
    c.kvBytesPerLayer = llama ? static_cast<std::int64_t>(ggmlRowBytes(opt.llamaCacheTypeK, u(c.kvLoraRank + c.ropeDim)))
                              : kvBytesPerLayer(opt.kvDtype, c.kvLoraRank, c.ropeDim);
    c.kvBytesPerToken = u(c.kvLayers * c.kvBytesPerLayer);
    c.attention.push_back(makeGroup(AttentionKind::Mla, c.kvLayers, u(c.kvBytesPerLayer), 1, std::nullopt, std::nullopt, "",
                           llama ? groupDigits(u(c.kvLoraRank)) + " latent + " + groupDigits(u(c.ropeDim)) +
                                       " RoPE key values in " + llamaCacheTypeName(opt.llamaCacheTypeK) + ", K only (V a view of it)"
                           : c.ropeDim > 0 ? groupDigits(u(c.kvLoraRank)) + " latent + " + groupDigits(u(c.ropeDim)) +
                                               " shared RoPE key values"
                                         : groupDigits(u(c.kvLoraRank)) + " latent values, no RoPE key", attentionAt));
    if (withDraft)
        for (int i = a.mainLayers; i < a.layerCount; ++i) c.attention.back().layerIndices.push_back(i);

    std::vector<int> indexAt = a.indexShare.full;
    const bool indexed = !indexAt.empty();
    if (indexed && opt.preset == CachePreset::Atom) { // every attention layer (not a recurrent one) and the draft
        indexAt = attentionAt;
        for (int i = a.mainLayers; i < a.layerCount; ++i) indexAt.push_back(i);
    }
    if (indexed && opt.preset == CachePreset::VllmMtp)
        for (int i = a.mainLayers; i < a.layerCount; ++i)
            if (a.layers[static_cast<std::size_t>(i)].indexerWeights) indexAt.push_back(i);
    c.indexLayers = static_cast<std::int64_t>(indexAt.size());
    const bool reference =
        opt.preset == CachePreset::Vllm || opt.preset == CachePreset::VllmMtp || opt.preset == CachePreset::Reference;
    const auto headDim = cfg.indexHeadDim ? cfg.indexHeadDim : a.diskIndexHeadDim;
    if (headDim) {
        c.indexHeadDim = *headDim;
        c.indexEntryBytesReference = indexEntryBytesReference(*headDim);
        c.indexEntryBytes = opt.indexEntryBytes.value_or(
            llama       ? static_cast<std::int64_t>(ggmlRowBytes(opt.llamaCacheTypeK, u(*headDim)))
            : reference ? indexEntryBytesReference(*headDim)
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
        // GLM-5.3-Flash pools its index keys: one entry per index_kpool tokens, and a tail of the last
        // 2 x index_kpool keys in BF16 per sequence (SGLang dsa_indexer_kpool).
        const std::uint64_t pool = u(cfg.indexKpool.value_or(1));
        c.indexBytesPerToken = u(c.indexLayers * c.indexEntryBytes) / pool;
        // Only a layer with softmax attention could own an indexer (not a recurrent one).
        c.indexBytesPerTokenEveryLayer = u(attentionCount * c.indexEntryBytes) / pool;
        if (c.indexLayers > 0) {
            AttentionLayers g = makeGroup(AttentionKind::IndexKeys, c.indexLayers, u(c.indexEntryBytes), pool, std::nullopt,
                              std::nullopt, "", groupDigits(u(c.indexEntryBytes)) + " B per entry", indexAt);
            if (pool > 1) {
                g.stateBytesPerLayer = 2 * pool * u(c.indexHeadDim) * 2;
                g.note += ", one entry per " + groupDigits(pool) + " tokens; a tail of " + groupDigits(2 * pool) +
                          " BF16 keys per sequence";
            }
            c.attention.push_back(std::move(g));
        }
    }
    recurrentGroups(cfg, a, opt, c);
    finish(c, cfg, opt);
    return c;
}

CacheOptions cacheOptionsOf(const CacheBudget &budget)
{
    CacheOptions o;
    o.kvDtype = budget.kvDtype;
    o.preset = budget.preset;
    o.stateDtype = budget.stateDtype;
    o.llamaCacheTypeK = budget.llamaCacheTypeK;
    o.llamaCacheTypeV = budget.llamaCacheTypeV;
    if (budget.indexEntryBytes > 0) o.indexEntryBytes = budget.indexEntryBytes;
    if (budget.contextTokens > 0) o.contextTokens = budget.contextTokens;
    return o;
}

std::string cacheShortWords(const CacheBudget &c)
{
    std::string who;
    switch (c.preset) {
    case CachePreset::Article: who = "the source article's count"; break;
    case CachePreset::Vllm: who = "vLLM"; break;
    case CachePreset::VllmMtp: who = "vLLM with MTP"; break;
    case CachePreset::Atom: who = "ATOM with its draft layer"; break;
    case CachePreset::Reference: who = "DeepSeek's reference"; break;
    case CachePreset::LlamaCpp: who = "llama.cpp"; break;
    }
    if (c.preset == CachePreset::LlamaCpp) {
        std::string words = who + " \u00b7 " + llamaCacheTypeName(c.llamaCacheTypeK) + (c.mla() ? " K (V a view of it)" : " K");
        if (!c.mla() && c.llamaCacheTypeV != c.llamaCacheTypeK) words += ", " + llamaCacheTypeName(c.llamaCacheTypeV) + " V";
        if (presetContextOf(c) == PresetContext::DsaIndexKeys)
            words += " \u00b7 " + std::to_string(c.indexEntryBytes) + " B index keys";
        return words;
    }
    std::string kv = c.kvDtype == KvDtype::BF16 ? "BF16" : c.kvDtype == KvDtype::FP8 ? "FP8" : "FP8 (fp8_ds_mla)";
    const bool mtp = c.preset == CachePreset::VllmMtp || c.preset == CachePreset::Atom;
    switch (presetContextOf(c)) {
    case PresetContext::DeepSeekV4Rows:
        if (c.preset == CachePreset::Article) who = "DeepSeek's reference"; // the same rows
        return who + " · " +
               (c.preset == CachePreset::Vllm || c.preset == CachePreset::VllmMtp ? "FP8 rows" : "BF16 rows");
    case PresetContext::DsaIndexKeys:
        return who + " · " + kv + (c.mla() ? " latent" : " K/V") + " · " + std::to_string(c.indexEntryBytes) +
               " B index keys";
    case PresetContext::NoIndexKeys: break;
    }
    // Without index keys the presets differ only in the MTP layer: say that, not whose count it is.
    return kv + (c.mla() ? " latent" : " K/V") + (mtp ? " · the MTP layer's too" : " · no MTP layer");
}

} // namespace atlas
