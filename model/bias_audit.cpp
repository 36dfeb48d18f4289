#include "bias_audit.h"

#include "bf16.h"
#include "errors.h"
#include "roles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

namespace atlas {

bool isCorrectionBias(std::string_view name)
{
    // Under any router's name: mlp.gate., block_sparse_moe.gate., mixer.gate., directly on block_sparse_moe
    // (MiniMax), ...; and DeepSeek-V4's ffn.gate.bias, which its Gate adds to the scores for the choice only.
    // llama.cpp's GGUF names it blk.N.exp_probs_b.bias (src/llama-arch.cpp LLM_TENSOR_FFN_EXP_PROBS_B).
    return name.ends_with(".e_score_correction_bias") || name == "e_score_correction_bias" ||
           name.ends_with(".ffn.gate.bias") || (name.starts_with("blk.") && name.ends_with(".exp_probs_b.bias"));
}

bool isRouterLinearBias(std::string_view name)
{
    if (!name.ends_with(".bias") || isCorrectionBias(name)) return false;
    return layerRole(placeOf(name).rest).category == Category::Router;
}

bool isRoutingBias(std::string_view name, BiasUse kind)
{
    return kind == BiasUse::Correction ? isCorrectionBias(name)
                                       : kind == BiasUse::Logit && isRouterLinearBias(name);
}

BiasFetchPlan planBiasFetch(const Checkpoint &ckpt, const std::vector<std::string> &extra)
{
    BiasFetchPlan plan;
    bool anyCorrection = false;
    for (const ShardHeader &shard : ckpt.shards)
        for (const TensorInfo &t : shard.tensors)
            anyCorrection = anyCorrection || isCorrectionBias(t.name);
    const BiasUse kind = anyCorrection ? BiasUse::Correction : BiasUse::Logit;
    std::set<std::string> wanted(extra.begin(), extra.end());
    std::set<std::string> found;
    // A correction bias holds one value per expert; nothing larger is read into memory.
    const std::uint64_t experts =
        static_cast<std::uint64_t>(ckpt.config.nRoutedExperts.value_or(kMaxConfigExperts));
    const std::uint64_t limit = experts * 4 + kBiasSlackBytes;
    for (std::uint32_t s = 0; s < ckpt.shards.size(); ++s) {
        const ShardHeader &shard = ckpt.shards[s];
        for (const TensorInfo &t : shard.tensors) {
            const bool bias = isRoutingBias(t.name, kind);
            if (!bias && !wanted.count(std::string(t.name))) continue;
            found.insert(std::string(t.name));
            if (t.bytes() > limit)
                throw AtlasError(ErrorKind::Invalid,
                                 shard.file + ": tensor '" + std::string(t.name) + "' holds " + std::to_string(t.bytes()) +
                                     " bytes, more than a router bias can (" + std::to_string(experts) +
                                     " experts x 4 bytes + " + std::to_string(kBiasSlackBytes) + " = " +
                                     std::to_string(limit) + "); it was not read");
            BiasFetchPlan::Item item;
            item.layer = placeOf(t.name).layer;
            // An MTP block named apart (mtp.layers.0.*) follows the decoder layers, whatever ".layers.0." says.
            if (const auto block = outsideLayersRole(t.name) == Category::Mtp ? mtpBlockPlace(t.name) : std::nullopt)
                item.layer = static_cast<int>(ckpt.config.numHiddenLayers.value_or(0)) + block->layer;
            item.tensor = t.name;
            item.shard = s;
            item.dtype = t.dtype;
            item.shape = t.shape.toVector();
            item.fileOffset = shard.dataStart() + t.begin;
            item.length = t.bytes();
            plan.items.push_back(std::move(item));
        }
    }
    for (const auto &name : wanted)
        if (!found.count(name))
            throw AtlasError(ErrorKind::Usage, "no tensor named '" + name + "' in the checkpoint");
    std::sort(plan.items.begin(), plan.items.end(), [](const auto &a, const auto &b) {
        return a.layer != b.layer ? a.layer < b.layer : a.tensor < b.tensor;
    });

    // Ranges: per shard by offset, joined only when one tensor ends where the next begins.
    std::vector<std::size_t> order(plan.items.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto &x = plan.items[a], &y = plan.items[b];
        return x.shard != y.shard ? x.shard < y.shard : x.fileOffset < y.fileOffset;
    });
    for (std::size_t i : order) {
        const auto &item = plan.items[i];
        plan.bytes += item.length;
        if (item.length == 0) continue;
        if (!plan.ranges.empty() && plan.ranges.back().shard == item.shard &&
            plan.ranges.back().offset + plan.ranges.back().length == item.fileOffset) {
            plan.ranges.back().length += item.length;
            plan.ranges.back().items.push_back(i);
            continue;
        }
        plan.ranges.push_back({item.shard, ckpt.shards[item.shard].file, item.fileOffset, item.length, {i}});
    }
    return plan;
}

std::vector<float> decodeValues(const BiasTensor &t)
{
    std::vector<float> out;
    const auto *p = reinterpret_cast<const unsigned char *>(t.raw.data());
    switch (t.dtype) {
    case Dtype::F32:
        out.resize(t.raw.size() / 4);
        for (std::size_t i = 0; i < out.size(); ++i) {
            const std::uint32_t bits = static_cast<std::uint32_t>(p[4 * i]) |
                                       static_cast<std::uint32_t>(p[4 * i + 1]) << 8 |
                                       static_cast<std::uint32_t>(p[4 * i + 2]) << 16 |
                                       static_cast<std::uint32_t>(p[4 * i + 3]) << 24;
            out[i] = std::bit_cast<float>(bits);
        }
        break;
    case Dtype::BF16:
    case Dtype::F16:
        out.resize(t.raw.size() / 2);
        for (std::size_t i = 0; i < out.size(); ++i) {
            const auto bits = static_cast<std::uint16_t>(p[2 * i] | p[2 * i + 1] << 8);
            out[i] = t.dtype == Dtype::BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
        }
        break;
    default:
        throw AtlasError(ErrorKind::Invalid,
                         t.tensor + ": a " + std::string(dtypeName(t.dtype)) +
                             " tensor cannot be audited as a bias (F32, BF16 or F16 only)");
    }
    return out;
}

std::optional<RouterConfig> routerConfigFor(const ModelConfig &cfg, std::size_t experts, BiasUse bias,
                                            std::string *why)
{
    if (!cfg.numExpertsPerTok) {
        if (why) *why = "num_experts_per_tok is missing from config.json";
        return std::nullopt;
    }
    if (cfg.nRoutedExperts && static_cast<std::size_t>(*cfg.nRoutedExperts) != experts) {
        if (why)
            *why = "the bias has " + std::to_string(experts) + " values but config.json says " +
                   std::to_string(*cfg.nRoutedExperts) + " experts";
        return std::nullopt;
    }
    // The router functions the simulator knows; any other is said plainly, never guessed.
    if (!cfg.scoringFunc.empty() && cfg.scoringFunc != "sigmoid" && cfg.scoringFunc != "softmax" &&
        cfg.scoringFunc != "sqrtsoftplus") {
        if (why)
            *why = "scoring_func '" + cfg.scoringFunc + "' is not simulated (sigmoid, softmax and sqrtsoftplus are)";
        return std::nullopt;
    }
    if (!cfg.topkMethod.empty() && cfg.topkMethod != "noaux_tc" && cfg.topkMethod != "greedy") {
        if (why) *why = "topk_method '" + cfg.topkMethod + "' is not simulated (noaux_tc and greedy are)";
        return std::nullopt;
    }
    RouterConfig r;
    r.bias = bias;
    if (!cfg.scoringFunc.empty()) {
        r.scoring = cfg.scoringFunc == "softmax"        ? Scoring::Softmax
                    : cfg.scoringFunc == "sqrtsoftplus" ? Scoring::SqrtSoftplus
                                                        : Scoring::Sigmoid;
        r.scoringFrom = "scoring_func " + cfg.scoringFunc;
    } else if (cfg.modelType == "gpt_oss") {
        r.scoring = Scoring::SoftmaxAfterTopk;
        r.scoringFrom = "no scoring_func; the gpt_oss router: top-K of the logits, softmax over the chosen";
    } else if (bias == BiasUse::Correction || cfg.topkMethod == "noaux_tc") {
        r.scoring = Scoring::Sigmoid;
        r.scoringFrom = "no scoring_func; a correction bias (noaux_tc) routes on sigmoid scores";
    } else {
        r.scoring = Scoring::Softmax;
        r.scoringFrom = "no scoring_func; softmax, the default of the transformers MoE routers";
    }
    r.experts = static_cast<int>(experts);
    r.topk = static_cast<int>(*cfg.numExpertsPerTok);
    r.groups = cfg.topkMethod == "greedy" ? 1 : static_cast<int>(cfg.nGroup.value_or(1)); // greedy: no groups
    r.topkGroups = cfg.topkMethod == "greedy" ? 1 : static_cast<int>(cfg.topkGroup.value_or(r.groups));
    r.normTopkProb = cfg.normTopkProb.value_or(true);
    r.scaling = static_cast<float>(cfg.routedScalingFactor.value_or(1.0));
    if (r.topk < 1 || r.topk > r.experts || r.groups < 1 || r.experts % r.groups != 0 || r.topkGroups < 1 ||
        r.topkGroups > r.groups) {
        if (why)
            *why = "config.json's router settings (num_experts_per_tok, n_group, topk_group) do not fit " +
                   std::to_string(experts) + " experts";
        return std::nullopt;
    }
    return r;
}

BiasStats analyzeBias(const BiasTensor &t, const std::optional<RouterConfig> &router)
{
    BiasStats s;
    s.layer = t.layer;
    s.tensor = t.tensor;
    s.dtype = std::string(dtypeName(t.dtype));
    s.shape = t.shape;
    s.sha256 = t.sha256;
    s.values = decodeValues(t);

    std::set<std::uint32_t> fp32;
    std::map<std::uint16_t, std::set<std::uint32_t>> byLevel; // BF16 bits -> FP32 bit patterns
    std::map<std::uint16_t, std::uint32_t> counts;
    for (float v : s.values) {
        if (std::isnan(v))
            ++s.nanCount;
        else if (std::isinf(v))
            ++s.infCount;
        else {
            s.min = s.min ? std::min(*s.min, v) : v;
            s.max = s.max ? std::max(*s.max, v) : v;
        }
        // +0 and -0 are one value, as are all NaNs.
        std::uint32_t bits = std::bit_cast<std::uint32_t>(v == 0.0f ? 0.0f : v);
        if (std::isnan(v)) bits = 0x7FC00000u;
        fp32.insert(bits);
        std::uint16_t level = bf16Bits(v);
        if (level == 0x8000) level = 0;
        byLevel[level].insert(bits);
        ++counts[level];
    }
    s.fp32Distinct = static_cast<std::uint32_t>(fp32.size());
    s.bf16Distinct = static_cast<std::uint32_t>(byLevel.size());
    for (const auto &[level, members] : byLevel) {
        Bf16Level l;
        l.value = bf16ToFloat(level);
        l.count = counts[level];
        l.fp32Distinct = static_cast<std::uint32_t>(members.size());
        l.fp32Min = std::bit_cast<float>(*members.begin());
        l.fp32Max = l.fp32Min;
        for (auto bits : members) {
            const float f = std::bit_cast<float>(bits);
            if (!std::isnan(f)) {
                l.fp32Min = std::min(l.fp32Min, f);
                l.fp32Max = std::max(l.fp32Max, f);
            }
        }
        s.levels.push_back(l);
    }
    std::sort(s.levels.begin(), s.levels.end(), [](const Bf16Level &a, const Bf16Level &b) {
        if (std::isnan(a.value) != std::isnan(b.value)) return !std::isnan(a.value);
        return a.value < b.value;
    });
    if (router && static_cast<std::size_t>(router->experts) == s.values.size()) {
        const ZeroLogitProbe probe = zeroLogitProbe(*router, s.values);
        s.zeroLogitReplaced = probe.replaced;
        s.zeroLogitMin = probe.min;
        s.zeroLogitMax = probe.max;
    }
    return s;
}

BiasSummary summarizeBiases(const std::vector<BiasStats> &stats, BiasUse kind)
{
    BiasSummary out;
    std::vector<std::uint32_t> fp32, bf16;
    bool sameCount = true;
    for (const auto &s : stats) {
        if (!isRoutingBias(s.tensor, kind)) continue;
        ++out.tensors;
        out.firstLayer = out.firstLayer < 0 ? s.layer : std::min(out.firstLayer, s.layer);
        out.lastLayer = std::max(out.lastLayer, s.layer);
        if (out.valuesPerTensor && *out.valuesPerTensor != s.values.size()) sameCount = false;
        out.valuesPerTensor = s.values.size();
        out.bytesRead += s.values.size() * (s.dtype == "F32" ? 4 : 2);
        out.bf16Bytes += s.values.size() * 2;
        fp32.push_back(s.fp32Distinct);
        bf16.push_back(s.bf16Distinct);
        out.layersLosingLevels += s.bf16Distinct < s.fp32Distinct;
        out.layersChangedAtZeroLogits += s.zeroLogitReplaced.value_or(0) > 0;
        out.layersChangedAtZeroLogitsMin += s.zeroLogitMin.value_or(0) > 0;
        out.layersChangedAtZeroLogitsMax += s.zeroLogitMax.value_or(0) > 0;
    }
    if (!sameCount) out.valuesPerTensor.reset();
    auto median = [](std::vector<std::uint32_t> v) {
        if (v.empty()) return 0.0;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? double(v[n / 2]) : (double(v[n / 2 - 1]) + double(v[n / 2])) / 2.0;
    };
    out.medianFp32Distinct = median(fp32);
    out.medianBf16Distinct = median(bf16);
    if (!bf16.empty()) {
        out.minBf16Distinct = *std::min_element(bf16.begin(), bf16.end());
        out.maxBf16Distinct = *std::max_element(bf16.begin(), bf16.end());
    }
    return out;
}

} // namespace atlas

#include "loaded_checkpoint.h"

namespace atlas {

BiasAudit auditBiases(const ModelConfig &config, const CheckpointAnalysis &analysis,
                      const std::vector<BiasTensor> &tensors, std::uint64_t bytesRead)
{
    BiasAudit audit;
    audit.bytesRead = bytesRead;
    audit.kind = BiasUse::None;
    for (const auto &t : tensors)
        if (isCorrectionBias(t.tensor))
            audit.kind = BiasUse::Correction;
        else if (audit.kind == BiasUse::None && isRouterLinearBias(t.tensor))
            audit.kind = BiasUse::Logit;
    for (const auto &t : tensors) {
        const bool routing = isRoutingBias(t.tensor, audit.kind);
        if (routing && !audit.router && audit.routerProblem.empty()) {
            const std::size_t count = t.raw.size() / std::max(1u, dtypeBits(t.dtype) / 8);
            audit.router = routerConfigFor(config, count, audit.kind, &audit.routerProblem);
        }
        audit.stats.push_back(analyzeBias(t, routing ? audit.router : std::nullopt));
        if (routing) audit.routing.push_back({t.layer, audit.stats.back().values, {}});
    }
    // Hash-routed layers (DeepSeek-V4's first num_hash_layers) take their experts from gate.tid2eid by
    // token id (the scores only weigh the chosen experts): nothing a rounded bias could change. They are listed, and skipped with that reason.
    auto addHashLayers = [&] {
        for (const LayerInfo &l : analysis.layers) {
            if (!l.hashRouted) continue;
            std::erase_if(audit.routing, [&](const LayerBias &b) { return b.layer == l.index; });
            audit.routing.push_back({l.index, {}, kHashRoutedReason});
        }
        std::stable_sort(audit.routing.begin(), audit.routing.end(),
                         [](const LayerBias &x, const LayerBias &y) { return x.layer < y.layer; });
    };
    if (audit.kind != BiasUse::None) {
        addHashLayers();
        return audit;
    }

    // No router bias at all: the simulation still shows what BF16 logits do, on every MoE layer.
    const auto experts = config.nRoutedExperts ? config.nRoutedExperts : analysis.diskRoutedExperts;
    if (!experts || *experts < 1) {
        audit.routerProblem = "the checkpoint has no routed experts";
        return audit;
    }
    audit.router = routerConfigFor(config, static_cast<std::size_t>(*experts), BiasUse::None, &audit.routerProblem);
    if (!audit.router) return audit;
    for (const LayerInfo &l : analysis.layers)
        if ((l.kind == LayerKind::Moe || (l.kind == LayerKind::Mtp && l.routedExperts > 0)) && !l.hashRouted)
            audit.routing.push_back({l.index, std::vector<float>(static_cast<std::size_t>(*experts), 0.0f), {}});
    if (audit.routing.empty()) {
        audit.router.reset();
        audit.routerProblem = "no layer of the checkpoint routes to experts";
    }
    addHashLayers();
    return audit;
}

} // namespace atlas
