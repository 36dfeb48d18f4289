#pragma once

// Expected counts for a synthetic layout, worked out from the architecture's arithmetic
// (independently of the writer's tensor list and of the analysis).
#include "synthetic_layout.h"

#include <cstdint>

namespace expected {

using atlas::synth::LayoutSpec;
using u64 = std::uint64_t;

inline u64 attention(const LayoutSpec &s)
{
    const u64 H = s.hidden, q = s.qLoraRank, kv = s.kvLoraRank, r = s.ropeDim, n = s.nopeDim, v = s.vDim,
              h = s.heads;
    return q * H + q + h * (n + r) * q + (kv + r) * H + kv + h * (n + v) * kv + H * h * v;
}
inline u64 indexer(const LayoutSpec &s)
{
    return u64(s.indexHeads) * s.indexHeadDim * s.qLoraRank + u64(s.indexHeadDim) * s.hidden +
           u64(s.indexHeads) * s.hidden + 2 * u64(s.indexHeadDim);
}
inline u64 expert(const LayoutSpec &s)
{
    return 3 * u64(s.moeInter) * s.hidden;
}
inline u64 routedPerLayer(const LayoutSpec &s)
{
    return u64(s.experts) * expert(s);
}
inline u64 sharedPerLayer(const LayoutSpec &s)
{
    return expert(s) * u64(s.sharedExperts);
}
inline u64 routerPerLayer(const LayoutSpec &s)
{
    return u64(s.experts) * s.hidden + (s.correctionBias ? s.experts : 0);
}
inline u64 denseMlp(const LayoutSpec &s)
{
    return 3 * u64(s.denseInter) * s.hidden;
}
inline u64 layerNorms(const LayoutSpec &s)
{
    return 2 * u64(s.hidden);
}

inline bool ownsIndexer(const LayoutSpec &s, std::int64_t i)
{
    using atlas::synth::IndexerPolicy;
    if (s.indexer == IndexerPolicy::None) return false;
    if (s.indexer == IndexerPolicy::EveryLayer || i >= s.layers) return true;
    // full when max(i - offset + 1, 0) % freq == 0
    const std::int64_t k = i - s.indexOffset + 1;
    return (k < 0 ? 0 : k) % s.indexFreq == 0;
}

inline int fullLayers(const LayoutSpec &s)
{
    int n = 0;
    for (std::int64_t i = 0; i < s.layers; ++i)
        n += ownsIndexer(s, i);
    return n;
}

inline u64 mtpLayer(const LayoutSpec &s)
{
    u64 p = attention(s) + layerNorms(s) + routedPerLayer(s) + sharedPerLayer(s) + routerPerLayer(s);
    if (s.indexer != atlas::synth::IndexerPolicy::None) p += indexer(s);
    p += 2 * u64(s.hidden) * s.hidden + 3 * u64(s.hidden); // eh_proj, enorm, hnorm, shared_head.norm
    if (s.mtpEmbedAndHead) p += 2 * u64(s.vocab) * s.hidden;
    return p;
}

struct Budget
{
    u64 total = 0, active = 0, routed = 0, mtp = 0, attention = 0, indexer = 0;
};

inline Budget budget(const LayoutSpec &s)
{
    Budget b;
    const u64 moeLayers = u64(s.layers - s.firstDense);
    b.routed = moeLayers * routedPerLayer(s);
    b.attention = u64(s.layers) * attention(s);
    b.indexer = u64(fullLayers(s)) * indexer(s);
    b.mtp = u64(s.mtpLayers) * mtpLayer(s);
    const u64 rest = b.attention + b.indexer + u64(s.layers) * layerNorms(s) +
                     u64(s.firstDense) * denseMlp(s) + moeLayers * (sharedPerLayer(s) + routerPerLayer(s)) +
                     2 * u64(s.vocab) * s.hidden + s.hidden;
    b.total = rest + b.routed + b.mtp;
    b.active = rest + b.routed * u64(s.topk) / u64(s.experts);
    return b;
}

} // namespace expected
