#include "deployment_search.h"

#include "errors.h"

#include <algorithm>
#include <tuple>

namespace atlas {

std::string SearchPoint::layout() const
{
    std::string s = "TP " + std::to_string(tp);
    if (pp > 1) s += ", PP " + std::to_string(pp);
    if (ep) s += ", EP " + std::to_string(ep);
    if (dpAttention > 1) s += ", DP attention " + std::to_string(dpAttention);
    return s;
}

namespace {

// 1 to 16 GPUs one by one (a node holds 8; 12 is a common answer), then whole nodes of 8.
std::vector<int> gpuCounts(int maxGpus)
{
    std::vector<int> n;
    for (int g = 1; g <= std::min(maxGpus, 16); ++g)
        n.push_back(g);
    for (int g = 24; g <= maxGpus; g += 8)
        n.push_back(g);
    return n;
}

} // namespace

DeploymentSearch searchDeployments(const LoadedCheckpoint &data, const SearchOptions &in)
{
    DeploymentSearch out;
    out.options = in;
    if (out.options.context == 0) out.options.context = defaultContextTokens(data.checkpoint.config);
    if (out.options.sequences == 0) out.options.sequences = 1;
    const SearchOptions &o = out.options;
    std::vector<const GpuPreset *> kinds = o.gpus;
    if (kinds.empty())
        for (const auto &g : gpuPresets())
            kinds.push_back(&g);
    const int layers = data.analysis.mainLayers;
    std::vector<bool> modes{o.mtp};
    if (o.mtpBoth && data.analysis.layerCount > data.analysis.mainLayers) modes = {false, true}; // it has MTP layers
    out.options.mtpBoth = modes.size() == 2; // as searched: without MTP layers there is one way
    out.options.cancel = nullptr;           // the flag belongs to the job, not to the answer
    out.options.totalsWithoutMtp.reset();   // nor do the totals lent for the search
    out.options.totalsWithMtp.reset();
    out.options.totalsOf.reset();

    std::optional<PlacementTotals> made[2]; // by mtp: the totals not lent, made here
    for (const bool mtp : modes) {
        const std::shared_ptr<const PlacementTotals> &lent = mtp ? in.totalsWithMtp : in.totalsWithoutMtp;
        if ((!lent || in.totalsOf.get() != &data) && !made[mtp]) {
            if (modes.size() == 2) // both ways wanted: one pass over the tensors
                std::tie(made[false], made[true]) = placementTotalsBoth(data);
            else
                made[mtp] = placementTotals(data, mtp);
        }
        const PlacementTotals &totals = made[mtp] ? *made[mtp] : *lent;
        for (const GpuPreset *gpu : kinds) {
            if (in.cancel && in.cancel->load(std::memory_order_relaxed)) return out; // nobody waits for it
            GpuSearch kind;
            kind.gpu = gpu;
            kind.mtp = mtp;
            CacheOptions co = o.cache ? *o.cache : engineCacheOptions(o.engine, mtp, gpu, data, {});
            co.contextTokens = o.context;
            const CacheBudget cache = computeCacheBudget(data.checkpoint, data.analysis, co);
            kind.cacheLayout =
                cacheLayoutWords(cache, o.cache ? std::nullopt : std::optional<PlanEngine>(o.engine));
            std::uint64_t bestSoFar = 0;
            for (const int n : gpuCounts(o.maxGpus)) {
                if (in.cancel && in.cancel->load(std::memory_order_relaxed)) return out;
                std::optional<SearchPoint> best;
                for (const int pp : {1, 2, 4, 8}) {
                    if (n % pp != 0 || pp > std::max(layers, 1)) continue;
                    const int tp = n / pp;
                    // EP off, or over any group of the stage's GPUs that divides them (SGLang's ep_size
                    // divides tp_size; vLLM's EP is the whole stage: planCapacity refuses what an engine
                    // cannot run).
                    for (int ep = 0; ep <= tp; ++ep) {
                        if (ep == 1 || (ep > 1 && tp % ep != 0)) continue; // EP over one GPU is no EP
                        for (int dp = 1; dp <= tp; dp *= 2) {
                            if (tp % dp != 0) continue;
                            PlanOptions p;
                            p.gpus = n;
                            p.tp = tp;
                            p.ep = ep;
                            p.pp = pp;
                            p.dpAttention = dp;
                            p.mtp = mtp;
                            p.gpuName = std::string(gpu->name);
                            p.gpuMemory = gpu->bytes;
                            p.memFraction = o.memFraction;
                            p.reserve = o.reserve;
                            p.context = o.context;
                            p.engine = o.engine;
                            ++out.plansTried;
                            try {
                                const CapacityPlan plan = planCapacity(data, p, &totals, &cache);
                                if (!plan.fits) continue;
                                // Ties keep the simpler layout (found first: no PP, no EP, no DP attention).
                                if (!best || plan.sequencesAtContext > best->sequences)
                                    best = SearchPoint{n,
                                                       tp,
                                                       ep,
                                                       pp,
                                                       dp,
                                                       plan.sequencesAtContext,
                                                       plan.perGpu.weightBytes,
                                                       plan.perGpu.maxCachedTokens};
                            } catch (const AtlasError &) {
                                ++out.plansRefused; // the engine cannot run it (heads, vocabulary, experts)
                            }
                        }
                    }
                }
                if (!best) continue;
                if (best->sequences > bestSoFar) {
                    kind.pareto.push_back(*best);
                    bestSoFar = best->sequences;
                }
                if (!kind.smallest && best->sequences >= o.sequences) kind.smallest = best;
            }
            out.gpus.push_back(std::move(kind));
        }
    }
    for (std::size_t i = 0; i < out.gpus.size(); ++i) {
        const auto &s = out.gpus[i].smallest;
        if (!s) continue;
        const auto &b = out.best ? out.gpus[*out.best].smallest : std::nullopt;
        if (!b || s->gpus < b->gpus || (s->gpus == b->gpus && s->sequences > b->sequences)) out.best = i;
    }
    return out;
}

} // namespace atlas
