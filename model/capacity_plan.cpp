#include "capacity_plan.h"

#include "c_locale.h"
#include "errors.h"
#include "report.h"
#include "roles.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace atlas {

std::string_view planEngineName(PlanEngine e)
{
    return e == PlanEngine::Sglang ? "sglang" : "vllm";
}

const std::vector<GpuPreset> &gpuPresets()
{
    // torch.cuda's total memory (domain.md section 14): H200 143,156 MiB, H100 80 GB 81,080 MiB, B200
    // 182,630 MiB; MI300X as the driver reports it. The others are the vendors' capacities (HBM / GDDR in
    // 2^30-byte GB, as the stacks hold it); a runtime sees a little less, so plans on them are optimistic by
    // that margin and say whose figure it is.
    constexpr std::uint64_t GiB = 1ull << 30;
    static const std::vector<GpuPreset> presets = {
        {"H100", 81080ull << 20, true, "torch total memory, H100 80GB SXM", 9},
        {"H200", 150109945856ull, true, "torch total memory, H200 141GB", 9},
        {"B200", 182630ull << 20, true, "torch total memory, B200", 10},
        {"MI300X", 205822885888ull, true, "the ROCm driver's total, MI300X", 0},
        {"H20", 96 * GiB, false, "NVIDIA's figure: 96 GB HBM3", 9},
        {"B300", 288 * GiB, false, "NVIDIA's figure: 288 GB HBM3e", 10},
        {"GB200", 186 * GiB, false, "NVIDIA's figure: 186 GB HBM3e per Blackwell GPU", 10},
        {"MI325X", 256 * GiB, false, "AMD's figure: 256 GB HBM3E", 0},
        {"MI355X", 288 * GiB, false, "AMD's figure: 288 GB HBM3E", 0},
        {"L40S", 48 * GiB, false, "NVIDIA's figure: 48 GB GDDR6", 8},
        {"RTX PRO 6000", 96 * GiB, false, "NVIDIA's figure: 96 GB GDDR7 (RTX PRO 6000 Blackwell)", 12},
    };
    return presets;
}

const GpuPreset *gpuPresetNamed(std::string_view name)
{
    auto key = [](std::string_view s) {
        std::string u;
        for (const char c : s)
            if (c != ' ' && c != '-' && c != '_') u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return u;
    };
    const std::string wanted = key(name);
    for (const auto &p : gpuPresets())
        if (key(p.name) == wanted) return &p;
    return nullptr;
}

std::optional<std::uint64_t> gpuMemoryFromName(std::string_view name)
{
    if (const GpuPreset *p = gpuPresetNamed(name)) return p->bytes;
    return std::nullopt;
}

namespace {

// The module a tensor belongs to, its last part: "self_attn.q_a_proj.weight_scale_inv" -> "q_a_proj".
std::string_view leafModule(std::string_view rest)
{
    const auto lastDot = rest.rfind('.');
    if (lastDot == std::string_view::npos) return rest;
    const std::string_view module = rest.substr(0, lastDot);
    const auto prev = module.rfind('.');
    return prev == std::string_view::npos ? module : module.substr(prev + 1);
}

enum class Place { Replicated, Split, SplitAttention, KvHeads, Experts, PaddedSink, Host, Skip };

// A tensor loaded only with the MTP layers: one of an MTP layer, or of an MTP block named apart from the layers.
bool onlyWithMtp(const CheckpointAnalysis &a, const TensorInfo &t, int layer)
{
    return layer < 0 ? a.outsideLayers(t.name) == Category::Mtp : layer >= a.mainLayers;
}

// vLLM's placement for the families it serves (domain.md section 14): what every GPU holds whole, what
// tensor parallelism splits (by vocabulary, heads or width), and the routed experts. Without the MTP layers
// (`mtp` false) their tensors are skipped; nothing else depends on `mtp`.
// `layer`: a.layerOf(t.name), found once by the caller.
Place placeOfTensor(const CheckpointAnalysis &a, const TensorInfo &t, bool mtp, int layer)
{
    if (!mtp && onlyWithMtp(a, t, layer)) return Place::Skip;
    if (layer < 0) {
        if (const auto outside = a.outsideLayers(t.name)) {
            if (*outside == Category::Mtp) return Place::Replicated;
            return Place::Split; // encoder towers: split by TP as vLLM runs them
        }
        const Category c = outsideRole(t.name);
        return c == Category::Embedding ? Place::Split : Place::Replicated;
    }
    const std::string_view rest = [&] {
        if (const auto block = mtpBlockPlace(t.name)) return block->rest;
        return placeOf(t.name).rest;
    }();
    const std::string_view leaf = leafModule(rest);
    Category category = layerRole(rest).category;
    // Host-resident n-gram memories (their scales too) stay in host memory: the engines fetch a token's
    // rows from there (ATOM engram_host, colibri's SSD-backed tables), no GPU holds them.
    if (category == Category::HostTables) return Place::Host;
    // A layer the schedule declares linear keeps its KDA projections under self_attn.* (as the analysis says).
    if (category == Category::Attention && layer < a.layerCount &&
        isRecurrent(a.layers[static_cast<std::size_t>(layer)].mixer))
        category = Category::LinearAttention;
    switch (category) {
    case Category::Attention:
        // The latent paths, norms and sinks stay whole; the per-head projections split.
        // Attention sinks split by heads (gpt-oss); DeepSeek-V4's attn_sink pads each rank to 64 FP32
        // values (vLLM deepseek_v4_attention.py: max(n_local_heads, 64)).
        if (rest.ends_with("attn_sink")) return Place::PaddedSink;
        if (rest.ends_with(".sinks") || rest == "sinks") return Place::SplitAttention;
        if (leaf == "q_a_proj" || leaf == "kv_a_proj_with_mqa" || leaf == "wq_a" || leaf == "wkv" ||
            leaf.find("norm") != std::string_view::npos || rest.find("compressor.") != std::string_view::npos)
            return Place::Replicated;
        if (leaf == "k_proj" || leaf == "v_proj") return Place::KvHeads;
        return Place::SplitAttention;
    case Category::RoutedExperts:
        return Place::Experts;
    case Category::SharedExperts:
    case Category::DenseMlp:
        return Place::Split;
    case Category::LinearAttention:
        // KDA's low-rank first halves of the decay and output gates are whole on every rank (vLLM kda.py:
        // f_a_proj, g_a_proj ReplicatedLinear); the rest splits by heads.
        return leaf.find("norm") != std::string_view::npos || leaf == "f_a_proj" || leaf == "g_a_proj"
                   ? Place::Replicated
                   : Place::SplitAttention;
    case Category::Indexer:
    case Category::Router:
    case Category::RouterTables:
    case Category::Norms:
    case Category::HyperConnections:
    default:
        return Place::Replicated;
    }
}

std::uint64_t ceilDiv(unsigned __int128 a, std::uint64_t b)
{
    return static_cast<std::uint64_t>((a + b - 1) / b);
}

// "layers 0-19, the embedding" for a pipeline stage.
std::string stageWords(const PlanStage &s, bool withMtp)
{
    std::string w = s.endLayer > s.firstLayer ? "layers " + std::to_string(s.firstLayer) + "–" +
                                                    std::to_string(s.endLayer - 1)
                                              : std::string("no decoder layer");
    if (s.embedding) w += ", the embedding";
    if (s.head) w += std::string(", the head") + (s.mtp && withMtp ? " and the MTP layers" : "");
    return w;
}

} // namespace

PlacementBucket &PlacementBucket::operator+=(const PlacementBucket &o)
{
    replicated += o.replicated;
    split += o.split;
    splitAttention += o.splitAttention;
    kvHeads += o.kvHeads;
    routed += o.routed;
    embedding += o.embedding;
    paddedSinks += o.paddedSinks;
    host += o.host;
    paddedSinkHeads = std::max(paddedSinkHeads, o.paddedSinkHeads);
    return *this;
}

PlacementBucket PlacementTotals::sum() const
{
    PlacementBucket out = first;
    out += last;
    for (const auto &l : layers) out += l;
    return out;
}

std::vector<std::pair<int, int>> pipelineStages(int layers, int pp, PlanEngine engine)
{
    std::vector<int> sizes(static_cast<std::size_t>(std::max(pp, 1)), layers / std::max(pp, 1));
    const int remaining = layers % std::max(pp, 1);
    const int from = engine == PlanEngine::Sglang ? 1 : 2; // SGLang: the last stages; vLLM: before the last
    for (int i = from; i < remaining + from; ++i) sizes[sizes.size() - static_cast<std::size_t>(i)] += 1;
    std::vector<std::pair<int, int>> out;
    int start = 0;
    for (const int n : sizes) {
        out.emplace_back(start, start + n);
        start += n;
    }
    return out;
}

double sglangMemFraction(std::uint64_t gpuMemory, int tp, int pp, int dpAttention)
{
    const double mib = double(gpuMemory) / double(1 << 20);
    double chunked = 0, maxBs = 0;
    if (mib < 20 * 1024) {
        chunked = 2048, maxBs = 8;
    } else if (mib < 35 * 1024) {
        chunked = 4096, maxBs = tp < 4 ? 48 : 160;
    } else if (mib < 60 * 1024) {
        chunked = 4096, maxBs = tp < 4 ? 32 : 160;
    } else if (mib < 160 * 1024) {
        chunked = 8192, maxBs = tp < 4 ? 256 : 512;
    } else {
        chunked = 16384, maxBs = 512;
    }
    double reserved = 512 + std::max(chunked, 2048.0) * 1.5 + double(tp) * double(pp) / 8 * 1024 + maxBs * 2;
    if (dpAttention > 1) {
        reserved += maxBs * dpAttention * 3;
        if (maxBs > 300) reserved += maxBs * dpAttention * 1.5;
    }
    if (mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
    return std::round((mib - reserved) / mib * 1000) / 1000;
}

namespace {

// The token embedding (GPT-NeoX's embed_out is its head).
bool isTokenEmbedding(std::string_view name)
{
    return name.find("embed") != std::string_view::npos && name.find("embed_out") == std::string_view::npos;
}

} // namespace

namespace {

// One tensor placed `p` (not Skip) into `out`.
void addPlacement(const CheckpointAnalysis &a, const TensorInfo &t, int layer, Place p, PlacementTotals &out)
{
    PlacementBucket *b = nullptr;
    bool tokenEmbedding = false;
    if (layer >= 0 && layer < a.layerCount) {
        b = &out.layers[static_cast<std::size_t>(layer)];
    } else {
        // Outside the decoder layers the first stage holds what comes before them (the token
        // embedding, encoder towers); the rest (final norm, head, hc_head) is the last stage's.
        const auto outside = a.outsideLayers(t.name);
        tokenEmbedding = !outside && isTokenEmbedding(t.name);
        if (layer < 0 && outside == Category::Mtp)
            b = &out.last; // MTP blocks named apart from the layers
        else
            b = outside || tokenEmbedding ? &out.first : &out.last;
    }
    switch (p) {
    case Place::Skip:
        break;
    case Place::Replicated:
        b->replicated += t.bytes();
        break;
    case Place::Split:
        // The token embedding apart: SGLang keeps it whole under DP attention.
        (layer < 0 && tokenEmbedding ? b->embedding : b->split) += t.bytes();
        break;
    case Place::SplitAttention:
        b->splitAttention += t.bytes();
        break;
    case Place::KvHeads:
        b->kvHeads += t.bytes();
        break;
    case Place::Experts:
        b->routed += t.bytes();
        break;
    case Place::Host:
        b->host += t.bytes();
        break;
    case Place::PaddedSink:
        b->paddedSinks += 1;
        b->paddedSinkHeads = std::max(b->paddedSinkHeads, t.numel);
        break;
    }
    // vLLM keeps the DSA indexer's wk in BF16: an FP8 wk is dequantised at load.
    if (t.dtype == Dtype::F8_E4M3 && t.name.ends_with("indexer.wk.weight")) {
        out.indexerWkFp8 += t.bytes();
        out.indexerWkBf16 += t.numel * 2;
    }
    if (t.dtype == Dtype::F8_E4M3 && t.name.ends_with("kv_b_proj.weight")) {
        out.kvBProjFp8 += t.bytes();
        out.kvBProjBf16 += t.numel * 2;
    }
}

// The totals without the MTP layers into `without`, with them into `with` (either may be null), each tensor
// placed once: it is placed alike either way, save that without the MTP layers onlyWithMtp's are skipped.
void addPlacements(const LoadedCheckpoint &data, PlacementTotals *without, PlacementTotals *with)
{
    const CheckpointAnalysis &a = data.analysis;
    for (PlacementTotals *out : {without, with})
        if (out) out->layers.resize(static_cast<std::size_t>(std::max(a.layerCount, 0)));
    for (const auto &shard : data.checkpoint.shards)
        for (const auto &t : shard.tensors) {
            const int layer = a.layerOf(t.name);
            const Place p = placeOfTensor(a, t, true, layer);
            if (p == Place::Skip) continue;
            if (without && !onlyWithMtp(a, t, layer)) addPlacement(a, t, layer, p, *without);
            if (with) addPlacement(a, t, layer, p, *with);
        }
}

} // namespace

PlacementTotals placementTotals(const LoadedCheckpoint &data, bool mtp)
{
    PlacementTotals out;
    addPlacements(data, mtp ? nullptr : &out, mtp ? &out : nullptr);
    return out;
}

std::pair<PlacementTotals, PlacementTotals> placementTotalsBoth(const LoadedCheckpoint &data)
{
    std::pair<PlacementTotals, PlacementTotals> out;
    addPlacements(data, &out.first, &out.second);
    return out;
}

CacheOptions engineCacheOptions(PlanEngine engine, bool mtp, const GpuPreset *gpu, const LoadedCheckpoint &data,
                                const CacheOptions &given)
{
    CacheOptions o;
    o.contextTokens = given.contextTokens;
    // Both engines keep 132-byte index entries (128 FP8 + an FP32 scale) on the layers that own an indexer:
    // vLLM deepseek_v2.py Indexer (DeepseekV32IndexerCache, built unless index_topk_freq skips the layer),
    // SGLang mem_cache/memory_pool.py NSATokenToKVPool with pool_configurator.py _compute_dsa_indexer_cell_size
    // (shared IndexShare layers elided). The MTP layer's cache only when speculative decoding loads it (both
    // add the draft layer to the pool then). On DeepSeek-V4 this preset is the FP8 rows both keep: 584 B a
    // compressed or window row, 132 B an index row (vLLM deepseek_v4/attention.py get_kv_cache_spec,
    // SGLang deepseek_v4_memory_pool.py DeepSeekV4SingleKVPool).
    o.preset = mtp ? CachePreset::VllmMtp : CachePreset::Vllm;
    // kv_cache_dtype "auto": the model's BF16 in vLLM (kv_cache_dtype_str_to_dtype). SGLang picks FP8 for DSA
    // models on Blackwell (arg_groups/overrides.py _dsa_kv_cache_dtype_default: "fp8_e4m3" if major >= 10),
    // a plain 576-byte row with its default trtllm backend there (kv_cache_configurator.py
    // calculate_mla_kv_cache_dim), BF16 on Hopper and AMD.
    const bool dsa = data.cache.indexBytesPerTokenEveryLayer > 0 && data.cache.mla();
    o.kvDtype = engine == PlanEngine::Sglang && dsa && gpu && gpu->cudaMajor >= 10 ? KvDtype::FP8 : KvDtype::BF16;
    // Recurrent state: SGLang FP32 for KDA, Gated DeltaNet and Mamba-2 (configs/mamba_utils.py
    // mamba2_state_dtype: float32 unless the config's mamba_ssm_dtype says); vLLM FP32 for KDA
    // (mamba_utils.py kda_state_dtype) but the model's BF16 for Gated DeltaNet and Mamba-2 when the config
    // declares nothing (MambaStateDtypeCalculator: "auto" follows the conv state's dtype).
    bool kda = false, bf16State = false;
    for (const auto &g : data.cache.attention) {
        kda = kda || g.kind == AttentionKind::Kda;
        bf16State = bf16State || g.kind == AttentionKind::GatedDeltaNet || g.kind == AttentionKind::Mamba2;
    }
    if (engine == PlanEngine::Vllm && !kda && bf16State && data.checkpoint.config.mambaSsmCacheDtype.empty())
        o.stateDtype = StateDtype::BF16;
    else if (data.checkpoint.config.mambaSsmCacheDtype.empty())
        o.stateDtype = StateDtype::FP32;
    return o;
}

std::string cacheLayoutWords(const CacheBudget &c, std::optional<PlanEngine> engine, std::string_view given)
{
    const std::string who = !engine                         ? std::string(given)
                            : *engine == PlanEngine::Sglang ? std::string("SGLang's ")
                                                            : std::string("vLLM's ");
    const bool withMtp = c.preset == CachePreset::VllmMtp || c.preset == CachePreset::Atom;
    std::string s = who;
    const auto kv = c.kvDtype == KvDtype::BF16 ? std::string("BF16")
                    : c.kvDtype == KvDtype::FP8 ? std::string("FP8")
                                                : std::string("FP8 (FlashMLA's fp8_ds_mla layout, 656 B)");
    switch (presetContextOf(c)) {
    case PresetContext::DeepSeekV4Rows:
        s += c.preset == CachePreset::Vllm || c.preset == CachePreset::VllmMtp
                 ? "FP8 rows (584 B a compressed or window row, 132 B an index row)"
                 : "BF16 rows as DeepSeek's reference keeps them (1,024 B a compressed or window row, 256 B an index row)";
        break;
    case PresetContext::DsaIndexKeys:
        s += kv + (c.mla() ? " latent" : " K and V") + " and " + std::to_string(c.indexEntryBytes) +
             "-byte FP8 index keys on the " + std::to_string(c.indexLayers) + " layer" + (c.indexLayers == 1 ? "" : "s") +
             (c.preset == CachePreset::Atom ? " (every layer)" : " that own an indexer");
        break;
    case PresetContext::NoIndexKeys:
        s += kv + (c.mla() ? " latent" : " K and V");
        break;
    }
    s += withMtp ? ", the MTP layer's cache too (speculative decoding)" : ", no MTP layer";
    if (c.fixedStateBytes) s += ", recurrent state in " + std::string(c.stateDtype == StateDtype::FP32 ? "FP32" : "BF16");
    return s;
}

CapacityPlan planCapacity(const LoadedCheckpoint &data, const PlanOptions &in, const PlacementTotals *totals,
                          const CacheBudget *cache)
{
    const ModelConfig &cfg = data.checkpoint.config;
    const CheckpointAnalysis &a = data.analysis;
    CapacityPlan plan;
    PlanOptions o = in;
    auto usage = [](const std::string &why) { throw AtlasError(ErrorKind::Usage, why); };
    if (o.gpus < 1) usage("--gpus must be at least 1");
    if (o.pp < 1) usage("--pp must be at least 1");
    if (o.pp > 1 && o.pp > a.mainLayers)
        usage("--pp " + std::to_string(o.pp) + " is more stages than the " + std::to_string(a.mainLayers) +
              " decoder layers");
    const int tp = o.tp.value_or(o.gpus / o.pp);
    if (tp < 1 || tp * o.pp != o.gpus)
        usage("--tp " + std::to_string(tp) + " × --pp " + std::to_string(o.pp) + " must equal --gpus " +
              std::to_string(o.gpus));
    o.tp = tp;
    if (o.dpAttention < 1 || tp % o.dpAttention != 0)
        usage("--dp-attention " + std::to_string(o.dpAttention) + " must divide the TP degree " + std::to_string(tp));
    const int attnTp = tp / o.dpAttention;
    if (cfg.numAttentionHeads && *cfg.numAttentionHeads % attnTp != 0)
        usage("TP " + std::to_string(attnTp) + " does not divide the " + std::to_string(*cfg.numAttentionHeads) +
              " attention heads (num_attention_heads)");
    if (cfg.kdaNumHeads && *cfg.kdaNumHeads > 0 && *cfg.kdaNumHeads % attnTp != 0)
        usage("TP " + std::to_string(attnTp) + " does not divide the " + std::to_string(*cfg.kdaNumHeads) +
              " KDA heads (linear_attn_config num_heads)");
    if (const auto v = cfg.raw.find("vocab_size");
        v != cfg.raw.end() && v->is_number_integer() && v->get<std::int64_t>() % tp != 0)
        usage("TP " + std::to_string(tp) + " does not divide the vocabulary of " +
              std::to_string(v->get<std::int64_t>()) + " tokens (vocab_size)");
    const std::int64_t experts = cfg.nRoutedExperts.value_or(a.diskRoutedExperts.value_or(0));
    if (o.redundantExperts < 0) usage("--redundant-experts cannot be negative");
    if (o.redundantExperts > 0 && o.ep == 0) usage("--redundant-experts needs --ep");
    if (o.ep < 0) usage("--ep cannot be negative");
    if (o.ep > 0) {
        if (experts <= 0) usage("--ep: the checkpoint has no routed experts");
        if ((experts + o.redundantExperts) % o.ep != 0)
            usage("--ep " + std::to_string(o.ep) + " does not divide " + std::to_string(experts) + " experts + " +
                  std::to_string(o.redundantExperts) + " redundant");
        const int stageGpus = o.gpus / o.pp; // experts are spread over the GPUs of one pipeline stage
        if (o.ep > stageGpus || stageGpus % o.ep != 0)
            usage("--ep " + std::to_string(o.ep) + " must divide the " + std::to_string(stageGpus) + " GPUs" +
                  (o.pp > 1 ? " of a pipeline stage" : ""));
    }
    if (o.gpuMemory == 0) usage("give the GPU: --gpu NAME or --gpu-memory BYTES");
    const bool fractionGiven = o.memFraction.has_value();
    if (!fractionGiven)
        o.memFraction = o.engine == PlanEngine::Sglang ? sglangMemFraction(o.gpuMemory, tp, o.pp, o.dpAttention) : 0.9;
    if (!(*o.memFraction > 0 && *o.memFraction <= 1))
        usage(fractionGiven ? "--mem-fraction must be in (0, 1]"
                            : "SGLang's default memory fraction for a GPU of " + groupDigits(o.gpuMemory) +
                                  " B is not positive; give --mem-fraction");
    const double fraction = *o.memFraction;
    const bool sglang = o.engine == PlanEngine::Sglang;
    plan.options = o;

    // Weights per GPU, tensor by tensor, by the placement rules; sums first, then one division each.
    const PlacementTotals own = totals ? PlacementTotals{} : placementTotals(data, o.mtp);
    const PlacementTotals &t = totals ? *totals : own;
    const std::uint64_t indexerFp8Wk = t.indexerWkFp8, indexerWkBf16 = t.indexerWkBf16;
    const std::uint64_t kvHeadCount = static_cast<std::uint64_t>(cfg.numKeyValueHeads.value_or(attnTp));
    const std::uint64_t kvDivisor = std::max<std::uint64_t>(1, std::min<std::uint64_t>(kvHeadCount, attnTp));
    const CacheBudget &c = cache ? *cache : data.cache;
    const std::uint64_t context = o.context ? o.context : c.contextTokens;
    plan.options.context = context;
    const std::uint64_t usable =
        static_cast<std::uint64_t>(std::floor(static_cast<long double>(o.gpuMemory) * fraction));
    // What every TP rank keeps whole, named as the model has it.
    std::vector<std::string> wholeKinds;
    for (const auto &grp : c.attention)
        if (grp.layers > 0 && grp.tpSplit == TpCacheSplit::Replicated && !grp.keptWhole.empty() &&
            std::find(wholeKinds.begin(), wholeKinds.end(), grp.keptWhole) == wholeKinds.end())
            wholeKinds.push_back(grp.keptWhole);
    const bool replicatedCache = !wholeKinds.empty();

    // One stage's GPU: its layers' weights and cache (the only stage without pipeline parallelism).
    auto planStage = [&](PlanStage &s, const PlacementBucket &w) {
        PlanPerGpu &g = s.perGpu;
        // SGLang keeps the token embedding whole under DP attention (VocabParallelEmbedding, enable_tp off).
        const bool wholeEmbedding = sglang && o.dpAttention > 1;
        g.replicatedBytes = w.replicated + (wholeEmbedding ? w.embedding : 0);
        const std::uint64_t sinkValues =
            std::max<std::uint64_t>(ceilDiv(w.paddedSinkHeads, static_cast<std::uint64_t>(attnTp)), 64);
        g.splitBytes = w.paddedSinks * sinkValues * 4 + ceilDiv(w.split, static_cast<std::uint64_t>(tp)) +
                       (wholeEmbedding ? 0 : ceilDiv(w.embedding, static_cast<std::uint64_t>(tp))) +
                       ceilDiv(w.splitAttention, static_cast<std::uint64_t>(attnTp)) + ceilDiv(w.kvHeads, kvDivisor);
        if (o.ep > 0) {
            g.experts = static_cast<std::uint64_t>((experts + o.redundantExperts) / o.ep);
            g.expertBytes = ceilDiv(static_cast<unsigned __int128>(w.routed) * g.experts, static_cast<std::uint64_t>(experts));
        } else {
            g.expertBytes = ceilDiv(w.routed, static_cast<std::uint64_t>(tp));
        }
        g.weightBytes = g.replicatedBytes + g.splitBytes + g.expertBytes;

        // The cache on each GPU: an MLA latent, index keys and DeepSeek-V4's rows are one head, kept whole on
        // every TP rank; K and V split by KV heads (at least one per GPU); recurrent states by heads.
        unsigned __int128 state = 0;
        long double perSequence = 0; // rows at the context (windows respected) and the state, per GPU
        long double windows = 0;     // the window layers' rows of one sequence once full, per GPU
        for (const auto &grp : c.attention) {
            std::uint64_t layers = 0;
            if (o.pp == 1) {
                layers = static_cast<std::uint64_t>(std::max<std::int64_t>(grp.layers, 0));
            } else {
                for (const int i : grp.layerIndices)
                    layers += i >= a.mainLayers ? s.mtp : (i >= s.firstLayer && i < s.endLayer);
            }
            double perToken = double(layers) * grp.bytesPerToken();
            const std::uint64_t tokens = grp.window ? std::min(*grp.window, context) : context;
            long double rows = (long double)(tokens / std::max<std::uint64_t>(grp.compression, 1)) *
                               grp.bytesPerTokenPerLayer * layers;
            unsigned __int128 st = static_cast<unsigned __int128>(grp.stateBytesPerLayer.value_or(0)) * layers;
            // The group's own rule (AttentionLayers::tpSplit): K and V by this group's KV heads, at least
            // one per GPU; a recurrent state by heads; a latent, index keys or one K=V head whole.
            const std::uint64_t byHeads =
                grp.tpSplit == TpCacheSplit::KvHeads
                    ? std::max<std::uint64_t>(1, std::min<std::uint64_t>(grp.kvHeads ? grp.kvHeads : kvHeadCount, attnTp))
                    : 1;
            perToken /= double(byHeads);
            rows /= byHeads;
            if (grp.tpSplit == TpCacheSplit::Heads) st = st / static_cast<std::uint64_t>(attnTp);
            // What grows per token is the layers without a window (cache.bytes_per_token); a window's
            // rows are held per sequence once full, as the state is.
            if (grp.window)
                windows += (long double)(*grp.window / std::max<std::uint64_t>(grp.compression, 1)) *
                           grp.bytesPerTokenPerLayer * layers / byHeads;
            else
                g.cacheBytesPerToken += perToken;
            state += st;
            perSequence += rows + (long double)st;
        }
        g.stateBytesPerSequence =
            state > static_cast<unsigned __int128>(UINT64_MAX) ? UINT64_MAX : static_cast<std::uint64_t>(state);
        g.usableBytes = usable;
        g.windowBytesPerSequence = static_cast<double>(windows);
        g.bytesPerSequence = static_cast<double>(perSequence);
        g.cacheRoomBytes = static_cast<std::int64_t>(g.usableBytes) - static_cast<std::int64_t>(g.weightBytes) -
                           static_cast<std::int64_t>(o.reserve);
        // Tokens of growing cache that fit beside one sequence's full windows.
        if (g.cacheRoomBytes > 0 && g.cacheBytesPerToken > 0 && (long double)g.cacheRoomBytes > windows)
            g.maxCachedTokens = static_cast<std::uint64_t>(
                std::floor(((long double)g.cacheRoomBytes - windows) / (long double)g.cacheBytesPerToken));
        if (c.available && g.cacheRoomBytes > 0 && perSequence > 0)
            s.sequencesAtContext = static_cast<std::uint64_t>(std::floor((long double)g.cacheRoomBytes / perSequence)) *
                                   static_cast<std::uint64_t>(o.dpAttention);
        else if (c.available && g.cacheRoomBytes > 0)
            s.sequencesAtContext = UINT64_MAX; // a stage whose layers keep no cache does not limit the sequences
    };

    const auto ranges = pipelineStages(a.mainLayers, o.pp, o.engine);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        PlanStage s;
        s.firstLayer = ranges[i].first;
        s.endLayer = ranges[i].second;
        s.embedding = i == 0;
        s.head = s.mtp = i + 1 == ranges.size();
        PlacementBucket w;
        if (s.embedding) w += t.first;
        if (s.head) w += t.last;
        for (std::size_t l = 0; l < t.layers.size(); ++l) {
            const int layer = static_cast<int>(l);
            if (layer >= a.mainLayers ? s.mtp : (layer >= s.firstLayer && layer < s.endLayer)) w += t.layers[l];
        }
        planStage(s, w);
        plan.stages.push_back(std::move(s));
    }
    // The binding stage: the first that does not fit, else the one holding the fewest sequences.
    for (std::size_t i = 1; i < plan.stages.size(); ++i) {
        const PlanStage &x = plan.stages[i], &best = plan.stages[static_cast<std::size_t>(plan.bindingStage)];
        const bool tighter = x.perGpu.cacheRoomBytes <= 0 || best.perGpu.cacheRoomBytes <= 0
                                 ? x.perGpu.cacheRoomBytes < best.perGpu.cacheRoomBytes
                                 : x.sequencesAtContext < best.sequencesAtContext ||
                                       (x.sequencesAtContext == best.sequencesAtContext &&
                                        x.perGpu.maxCachedTokens < best.perGpu.maxCachedTokens);
        if (tighter) plan.bindingStage = static_cast<int>(i);
    }
    plan.hostBytes = t.sum().host;
    const PlanStage &bound = plan.stages[static_cast<std::size_t>(plan.bindingStage)];
    const bool withMtp = o.mtp && a.layerCount > a.mainLayers;
    plan.perGpu = bound.perGpu;
    PlanPerGpu &g = plan.perGpu;
    plan.sequencesAtContext = bound.sequencesAtContext == UINT64_MAX ? 0 : bound.sequencesAtContext;
    plan.fits = c.available && g.cacheRoomBytes > 0 && plan.sequencesAtContext >= 1;

    if (o.pp > 1)
        plan.notes.push_back(std::string("Pipeline stages by ") + (sglang ? "SGLang" : "vLLM") +
                             "'s get_pp_indices; the figures are stage " +
                             std::to_string(plan.bindingStage + 1) + "'s (" + stageWords(bound, withMtp) +
                             "), the one with the least room");
    const std::string gpu = o.gpuName.empty() ? groupDigits(o.gpuMemory) + " B GPU" : o.gpuName;
    if (g.cacheRoomBytes <= 0) {
        const std::uint64_t need = g.weightBytes + o.reserve;
        plan.reason = "Does not fit: " +
                      (o.pp > 1 ? "each of the " + std::to_string(tp) + " GPUs of stage " +
                                      std::to_string(plan.bindingStage + 1) + " (" + stageWords(bound, withMtp) + ")"
                                : "each of the " + std::to_string(o.gpus) + " GPUs") +
                      " needs " + binaryBytes(need) +
                      " for weights" + (o.reserve ? " and reserve" : "") + " but has " + binaryBytes(g.usableBytes) +
                      " usable (" + gpu + " × " + fixedPoint(fraction, std::round(fraction * 100) == fraction * 100 ? 2 : 3) + "): " +
                      binaryBytes(need - g.usableBytes) + " (" + groupDigits(need - g.usableBytes) + " B) short" +
                      // Expert parallelism over a stage's GPUs holds as many expert bytes per GPU as TP's
                      // split of every expert does: only more GPUs (or stages) take weights off each one.
                      "; more GPUs spread the weights";
    } else if (!c.available) {
        plan.reason = "The weights fit (" + binaryBytes(g.weightBytes) + " per GPU), but the cache cannot be sized: " +
                      c.reason;
    } else if (!plan.fits) {
        plan.reason = "The weights fit (" + binaryBytes(g.weightBytes) + " per GPU), but the " +
                      binaryBytes(static_cast<std::uint64_t>(g.cacheRoomBytes)) + " left hold " +
                      groupDigits(g.maxCachedTokens) + " tokens, less than one sequence of " + groupDigits(context) +
                      " tokens";
    } else {
        plan.reason = "Fits: " + binaryBytes(g.weightBytes) + " of weights per GPU leave " +
                      binaryBytes(static_cast<std::uint64_t>(g.cacheRoomBytes)) + " for the cache: " +
                      groupDigits(g.maxCachedTokens) + " tokens per GPU, " + groupDigits(plan.sequencesAtContext) +
                      " sequence" + (plan.sequencesAtContext == 1 ? "" : "s") + " of " + groupDigits(context) +
                      " tokens in the deployment";
    }
    if (replicatedCache && attnTp > 1) {
        std::string what;
        for (std::size_t i = 0; i < wholeKinds.size(); ++i)
            what += (i == 0 ? "" : i + 1 == wholeKinds.size() ? " and " : ", ") + wholeKinds[i];
        what[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(what[0])));
        const bool saysHead = what.find("head") != std::string::npos; // DeepSeek-V4's "one K=V head" already does
        plan.notes.push_back(what + " cannot be split by TP" + (saysHead ? "" : " (one head)") + ": every one of the " +
                             std::to_string(attnTp) +
                             " TP ranks keeps all of it (" +
                             groupDigits(static_cast<std::uint64_t>(g.cacheBytesPerToken)) +
                             " B per token on each GPU); only data-parallel attention (--dp-attention) multiplies the "
                             "sequences");
    }
    if (!sglang && indexerFp8Wk)
        plan.notes.push_back("vLLM dequantises the FP8 indexer wk to BF16 at load: " +
                             groupDigits(indexerWkBf16 - indexerFp8Wk) + " B more" + (o.pp > 1 ? " over all stages" : " per GPU") +
                             " than the checkpoint stores (weight_bytes counts it as stored)");
    if (sglang && indexerFp8Wk) {
        const auto interleave = cfg.raw.find("indexer_rope_interleave");
        const bool fused = interleave != cfg.raw.end() && interleave->is_boolean() && interleave->get<bool>();
        plan.notes.push_back(fused ? "SGLang's fused indexer (indexer_rope_interleave) dequantises the FP8 wk to BF16 at "
                                     "load: " + groupDigits(indexerWkBf16 - indexerFp8Wk) + " B more" +
                                         (o.pp > 1 ? " over all stages" : " per GPU") + " (weight_bytes counts it as stored)"
                                   : "SGLang keeps the FP8 indexer wk as stored (its fused BF16 path needs "
                                     "indexer_rope_interleave)");
    }
    if (sglang && t.kvBProjFp8)
        plan.notes.push_back("SGLang may keep BF16 copies of the FP8 kv_b_proj (w_kc, w_vc) when DeepGEMM's batched "
                             "matmul is off: up to " + groupDigits(ceilDiv(t.kvBProjBf16, static_cast<std::uint64_t>(attnTp))) +
                             " B more" + (o.pp > 1 ? " over all stages" : " per GPU") + ", not counted; --reserve can hold it");
    if (sglang && o.dpAttention > 1 && t.sum().embedding)
        plan.notes.push_back("SGLang keeps the token embedding whole on every GPU under DP attention (counted as replicated)");
    if (sglang && !fractionGiven)
        plan.notes.push_back("SGLang's default mem_fraction_static for this GPU and parallelism: " + fixedPoint(fraction, 3) +
                             " (its memory heuristic; the prefill CUDA graph of MLA backends reserves 1.5 GiB more when "
                             "on); --mem-fraction sets it");
    const bool draftCache = c.preset == CachePreset::VllmMtp || c.preset == CachePreset::Atom;
    if (o.mtp != draftCache && a.layerCount > a.mainLayers)
        plan.notes.push_back(o.mtp ? "--mtp loads the MTP weights but the cache preset (" +
                                         std::string(cachePresetName(c.preset)) +
                                         ") keeps no draft layer; --cache-preset vllm-mtp counts its cache"
                                   : "the cache preset " + std::string(cachePresetName(c.preset)) +
                                         " keeps the draft layer's cache but --mtp is not set: its weights are "
                                         "not counted");
    if (plan.hostBytes)
        plan.notes.push_back("Host memory: " + binaryBytes(plan.hostBytes) + " (" + groupDigits(plan.hostBytes) +
                             " B) of host-resident n-gram tables stay in host memory, on no GPU; a token's rows are "
                             "fetched from there");
    if (!o.mtp && a.layerCount > a.mainLayers)
        plan.notes.push_back("MTP layers excluded (--mtp includes them, as speculative decoding loads them)");
    plan.notes.push_back("Activations, CUDA graphs and communication buffers come out of the cache room; "
                         "--reserve BYTES sets them aside");
    return plan;
}

} // namespace atlas
