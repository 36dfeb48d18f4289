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
    // torch.cuda's total memory (domain.md section 14): H200 143,156 MiB, H100 80 GB 81,080 MiB,
    // B200 182,630 MiB; MI300X as the driver reports it.
    static const std::vector<GpuPreset> presets = {
        {"H100", 81080ull << 20},
        {"H200", 150109945856ull},
        {"B200", 182630ull << 20},
        {"MI300X", 205822885888ull},
    };
    return presets;
}

std::optional<std::uint64_t> gpuMemoryFromName(std::string_view name)
{
    auto upper = [](std::string_view s) {
        std::string u(s);
        for (auto &c : u)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return u;
    };
    for (const auto &p : gpuPresets())
        if (upper(p.name) == upper(name)) return p.bytes;
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

enum class Place { Replicated, Split, SplitAttention, KvHeads, Experts, Skip };

// vLLM's placement for the families it serves (domain.md section 14): what every GPU holds whole, what
// tensor parallelism splits (by vocabulary, heads or width), and the routed experts.
Place placeOfTensor(const CheckpointAnalysis &a, const TensorInfo &t, bool mtp)
{
    const int layer = a.layerOf(t.name);
    if (layer < 0) {
        if (const auto outside = outsideLayersRole(t.name)) {
            if (*outside == Category::Mtp) return mtp ? Place::Replicated : Place::Skip;
            return Place::Split; // encoder towers: split by TP as vLLM runs them
        }
        const Category c = outsideRole(t.name);
        return c == Category::Embedding ? Place::Split : Place::Replicated;
    }
    if (layer >= a.mainLayers && !mtp) return Place::Skip;
    const std::string_view rest = [&] {
        if (const auto block = mtpBlockPlace(t.name)) return block->rest;
        return placeOf(t.name).rest;
    }();
    const std::string_view leaf = leafModule(rest);
    switch (layerRole(rest).category) {
    case Category::Attention:
        // The latent paths, norms and sinks stay whole; the per-head projections split.
        if (leaf == "q_a_proj" || leaf == "kv_a_proj_with_mqa" || leaf == "wq_a" || leaf == "wkv" ||
            leaf.find("norm") != std::string_view::npos || leaf.find("sink") != std::string_view::npos ||
            rest.find("compressor.") != std::string_view::npos || rest.ends_with("attn_sink") || rest.ends_with(".sinks"))
            return Place::Replicated;
        if (leaf == "k_proj" || leaf == "v_proj") return Place::KvHeads;
        return Place::SplitAttention;
    case Category::RoutedExperts:
        return Place::Experts;
    case Category::SharedExperts:
    case Category::DenseMlp:
        return Place::Split;
    case Category::LinearAttention:
        return leaf.find("norm") != std::string_view::npos ? Place::Replicated : Place::SplitAttention;
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

} // namespace

PlacementTotals placementTotals(const LoadedCheckpoint &data, bool mtp)
{
    PlacementTotals out;
    for (const auto &shard : data.checkpoint.shards)
        for (const auto &t : shard.tensors) {
            const Place p = placeOfTensor(data.analysis, t, mtp);
            switch (p) {
            case Place::Skip:
                break;
            case Place::Replicated:
                out.replicated += t.bytes();
                break;
            case Place::Split:
                out.split += t.bytes();
                break;
            case Place::SplitAttention:
                out.splitAttention += t.bytes();
                break;
            case Place::KvHeads:
                out.kvHeads += t.bytes();
                break;
            case Place::Experts:
                out.routed += t.bytes();
                break;
            }
            // vLLM keeps the DSA indexer's wk in BF16: an FP8 wk is dequantised at load.
            if (p != Place::Skip && t.dtype == Dtype::F8_E4M3 && t.name.ends_with("indexer.wk.weight")) {
                out.indexerWkFp8 += t.bytes();
                out.indexerWkBf16 += t.numel * 2;
            }
        }
    return out;
}

CapacityPlan planCapacity(const LoadedCheckpoint &data, const PlanOptions &in, const PlacementTotals *totals)
{
    const ModelConfig &cfg = data.checkpoint.config;
    const CheckpointAnalysis &a = data.analysis;
    CapacityPlan plan;
    PlanOptions o = in;
    auto usage = [](const std::string &why) { throw AtlasError(ErrorKind::Usage, why); };
    if (o.gpus < 1) usage("--gpus must be at least 1");
    if (o.pp != 1)
        usage("--pp " + std::to_string(o.pp) +
              ": pipeline stages are not planned yet (weights and cache per stage); plan with --pp 1");
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
        if (o.ep > o.gpus || o.gpus % o.ep != 0)
            usage("--ep " + std::to_string(o.ep) + " must divide the " + std::to_string(o.gpus) + " GPUs");
    }
    if (o.gpuMemory == 0) usage("give the GPU: --gpu NAME or --gpu-memory BYTES");
    if (!(o.memFraction > 0 && o.memFraction <= 1)) usage("--mem-fraction must be in (0, 1]");
    plan.options = o;

    // Weights per GPU, tensor by tensor, by the placement rules; sums first, then one division each.
    const PlacementTotals own = totals ? PlacementTotals{} : placementTotals(data, o.mtp);
    const PlacementTotals &t = totals ? *totals : own;
    const unsigned __int128 replicated = t.replicated, split = t.split, splitAttention = t.splitAttention,
                            kvHeads = t.kvHeads, routed = t.routed;
    const std::uint64_t indexerFp8Wk = t.indexerWkFp8, indexerWkBf16 = t.indexerWkBf16;
    PlanPerGpu &g = plan.perGpu;
    g.replicatedBytes = static_cast<std::uint64_t>(replicated);
    const std::uint64_t kvHeadCount = static_cast<std::uint64_t>(cfg.numKeyValueHeads.value_or(attnTp));
    const std::uint64_t kvDivisor = std::max<std::uint64_t>(1, std::min<std::uint64_t>(kvHeadCount, attnTp));
    g.splitBytes = ceilDiv(split, static_cast<std::uint64_t>(tp)) + ceilDiv(splitAttention, static_cast<std::uint64_t>(attnTp)) +
                   ceilDiv(kvHeads, kvDivisor);
    if (o.ep > 0) {
        g.experts = static_cast<std::uint64_t>((experts + o.redundantExperts) / o.ep);
        g.expertBytes = ceilDiv(routed * g.experts, static_cast<std::uint64_t>(experts));
    } else {
        g.expertBytes = ceilDiv(routed, static_cast<std::uint64_t>(tp));
    }
    g.weightBytes = g.replicatedBytes + g.splitBytes + g.expertBytes;

    // The cache on each GPU: an MLA latent, index keys and DeepSeek-V4's rows are one head, kept whole on
    // every TP rank; K and V split by KV heads (at least one per GPU); recurrent states by heads.
    const CacheBudget &c = data.cache;
    const std::uint64_t context = o.context ? o.context : c.contextTokens;
    plan.options.context = context;
    unsigned __int128 state = 0;
    long double perSequence = 0; // rows at the context (windows respected) and the state, per GPU
    bool replicatedCache = false;
    for (const auto &grp : c.attention) {
        double perToken = double(grp.layers) * grp.bytesPerToken();
        const std::uint64_t tokens = grp.window ? std::min(*grp.window, context) : context;
        long double rows = (long double)(tokens / std::max<std::uint64_t>(grp.compression, 1)) *
                           grp.bytesPerTokenPerLayer * static_cast<std::uint64_t>(grp.layers);
        unsigned __int128 st = static_cast<unsigned __int128>(grp.stateBytesPerLayer.value_or(0)) *
                               static_cast<std::uint64_t>(grp.layers);
        switch (grp.kind) {
        case AttentionKind::Full:
        case AttentionKind::Sliding:
            perToken /= double(kvDivisor);
            rows /= kvDivisor;
            break;
        case AttentionKind::Kda:
        case AttentionKind::GatedDeltaNet:
        case AttentionKind::Mamba2:
        case AttentionKind::Linear:
            st = st / static_cast<std::uint64_t>(attnTp);
            break;
        default:
            replicatedCache = replicatedCache || grp.layers > 0;
            break;
        }
        g.cacheBytesPerToken += perToken;
        state += st;
        perSequence += rows + (long double)st;
    }
    g.stateBytesPerSequence =
        state > static_cast<unsigned __int128>(UINT64_MAX) ? UINT64_MAX : static_cast<std::uint64_t>(state);
    g.usableBytes = static_cast<std::uint64_t>(std::floor(static_cast<long double>(o.gpuMemory) * o.memFraction));
    g.cacheRoomBytes = static_cast<std::int64_t>(g.usableBytes) - static_cast<std::int64_t>(g.weightBytes) -
                       static_cast<std::int64_t>(o.reserve);
    if (g.cacheRoomBytes > 0 && g.cacheBytesPerToken > 0)
        g.maxCachedTokens = static_cast<std::uint64_t>(std::floor(double(g.cacheRoomBytes) / g.cacheBytesPerToken));
    if (c.available && g.cacheRoomBytes > 0 && perSequence > 0)
        plan.sequencesAtContext =
            static_cast<std::uint64_t>(std::floor((long double)g.cacheRoomBytes / perSequence)) *
            static_cast<std::uint64_t>(o.dpAttention);
    plan.fits = c.available && g.cacheRoomBytes > 0 && plan.sequencesAtContext >= 1;

    const std::string gpu = o.gpuName.empty() ? groupDigits(o.gpuMemory) + " B GPU" : o.gpuName;
    if (g.cacheRoomBytes <= 0) {
        const std::uint64_t need = g.weightBytes + o.reserve;
        plan.reason = "Does not fit: each of the " + std::to_string(o.gpus) + " GPUs needs " + binaryBytes(need) +
                      " for weights" + (o.reserve ? " and reserve" : "") + " but has " + binaryBytes(g.usableBytes) +
                      " usable (" + gpu + " × " + fixedPoint(o.memFraction, 2) + "): " +
                      binaryBytes(need - g.usableBytes) + " (" + groupDigits(need - g.usableBytes) + " B) short" +
                      (o.ep == 0 && experts > 0 ? "; more GPUs or expert parallelism (--ep) spread the experts"
                                                : "; more GPUs spread the weights");
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
    if (replicatedCache && attnTp > 1)
        plan.notes.push_back("The MLA latent and the index keys are one head: every one of the " + std::to_string(attnTp) +
                             " TP ranks keeps all of them (" + groupDigits(static_cast<std::uint64_t>(g.cacheBytesPerToken)) +
                             " B per token); only data-parallel attention (--dp-attention) multiplies the sequences");
    if (o.engine == PlanEngine::Vllm && indexerFp8Wk)
        plan.notes.push_back("vLLM dequantises the FP8 indexer wk to BF16 at load: " +
                             groupDigits(indexerWkBf16 - indexerFp8Wk) +
                             " B more per GPU than the checkpoint stores (weight_bytes counts it as stored)");
    const bool draftCache = c.preset == CachePreset::VllmMtp || c.preset == CachePreset::Atom;
    if (o.mtp != draftCache && a.layerCount > a.mainLayers)
        plan.notes.push_back(o.mtp ? "--mtp loads the MTP weights but the cache preset (" +
                                         std::string(cachePresetName(c.preset)) +
                                         ") keeps no draft layer; --cache-preset vllm-mtp counts its cache"
                                   : "the cache preset " + std::string(cachePresetName(c.preset)) +
                                         " keeps the draft layer's cache but --mtp is not set: its weights are "
                                         "not counted");
    if (!o.mtp && a.layerCount > a.mainLayers)
        plan.notes.push_back("MTP layers excluded (--mtp includes them, as speculative decoding loads them)");
    plan.notes.push_back("Activations, CUDA graphs and communication buffers come out of the cache room; "
                         "--reserve BYTES sets them aside");
    return plan;
}

} // namespace atlas
