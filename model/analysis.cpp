#include "analysis.h"
#include "roles.h"

#include "errors.h"
#include "module_pattern.h"
#include "name_map.h"
#include "populate.h"
#include "untrusted_text.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace atlas {

namespace {

bool startsWith(std::string_view s, std::string_view p)
{
    return s.substr(0, p.size()) == p;
}
bool endsWith(std::string_view s, std::string_view p)
{
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
// The same for a literal suffix: its length known here, the compare is a few integer compares inlined, not a
// call to memcmp (asked of each tensor several times over, 4 % of Kimi-K3's open in callgrind).
template <std::size_t N> [[gnu::always_inline]] inline bool endsWith(std::string_view s, const char (&p)[N])
{
    constexpr std::size_t n = N - 1;
    assert(std::char_traits<char>::length(p) == n); // a literal, not a buffer
    return s.size() >= n && __builtin_memcmp(s.data() + s.size() - n, p, n) == 0;
}

int parseInt(std::string_view digits)
{
    int v = -1;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return r.ec == std::errc() && r.ptr == digits.data() + digits.size() ? v : -1;
}

} // namespace

std::string_view categoryName(Category c)
{
    static constexpr std::array<std::string_view, kCategoryCount> names{
        "routed_experts", "shared_experts",    "attention",        "indexer",  "router",
        "dense_mlp",      "embedding",         "norms",            "mtp",      "linear_attention",
        "encoders",       "hyper_connections", "router_tables",    "host_tables", "other"};
    return names[static_cast<std::size_t>(c)];
}

std::string_view layerKindName(LayerKind k)
{
    switch (k) {
    case LayerKind::Dense:
        return "dense";
    case LayerKind::Moe:
        return "moe";
    case LayerKind::Mtp:
        return "mtp";
    }
    return "dense";
}

std::string_view indexShareSourceName(IndexShareSource s)
{
    switch (s) {
    case IndexShareSource::Pattern:
        return "index_topk_pattern";
    case IndexShareSource::IndexerTypes:
        return "indexer_types";
    case IndexShareSource::Formula:
        return "formula";
    case IndexShareSource::EveryLayer:
        return "every_layer";
    case IndexShareSource::SourceLayers:
        return "index_source_layer_ids";
    case IndexShareSource::None:
        break;
    }
    return "none";
}

std::string_view indexerRoleName(IndexerRole r)
{
    switch (r) {
    case IndexerRole::Full:
        return "full";
    case IndexerRole::Shared:
        return "shared";
    case IndexerRole::None:
        break;
    }
    return "none";
}

double QuantRow::bitsPerWeight() const
{
    std::uint64_t bytes = scales.bytes, elements = 0;
    for (const auto &[d, t] : dtypes)
        bytes += t.bytes, elements += t.elements;
    return elements ? 8.0 * double(bytes) / double(elements) : 0.0;
}

double bitsPerWeight(const std::vector<QuantRow> &layout)
{
    std::uint64_t bytes = 0, elements = 0;
    for (const auto &row : layout) {
        bytes += row.scales.bytes;
        for (const auto &[d, t] : row.dtypes)
            bytes += t.bytes, elements += t.elements;
    }
    return elements ? 8.0 * double(bytes) / double(elements) : 0.0;
}

TensorPlace placeOf(std::string_view name)
{
    // llama.cpp's GGUF names: "blk.N." (src/llama-arch.cpp LLM_TENSOR_NAMES), the MTP blocks last among them.
    if (startsWith(name, "blk.")) {
        const std::size_t dot = name.find('.', 4);
        if (dot == std::string_view::npos || dot == 4) return {-1, name};
        const int layer = parseInt(name.substr(4, dot - 4));
        return layer < 0 ? TensorPlace{-1, name} : TensorPlace{layer, name.substr(dot + 1)};
    }
    // Accept "model.layers.N." and any prefix ending in ".layers.N." (wrapped language models).
    std::size_t pos = startsWith(name, "layers.") ? 0 : name.find(".layers.");
    if (pos == std::string_view::npos) return {-1, name};
    const std::size_t start = pos == 0 && startsWith(name, "layers.") ? 7 : pos + 8;
    std::size_t dot = name.find('.', start);
    if (dot == std::string_view::npos || dot == start) return {-1, name};
    const int layer = parseInt(name.substr(start, dot - start));
    if (layer < 0) return {-1, name};
    return {layer, name.substr(dot + 1)};
}

bool isQuantScale(std::string_view name, Dtype dtype)
{
    // Block and group scales, zero points, group indices and packing records (domain.md sections 5, 10).
    static constexpr std::array<std::string_view, 13> kSuffixes{"_scale_inv",
                                                                ".biases", // MLX: a group's offset beside .scales
                                                                ".weight_scale",
                                                                ".weight_scale_2",
                                                                ".input_scale",
                                                                ".weight_zero_point",
                                                                ".weight_shape",
                                                                ".weight_global_scale",
                                                                ".input_global_scale",
                                                                "_scales",
                                                                ".qzeros",
                                                                ".g_idx",
                                                                ".scales"};
    if (dtype == Dtype::F8_E8M0) return true;
    if (name.empty()) return false;
    // Asked of every tensor: the last character rules out nearly every suffix before any comparison
    // (a ".weight" is held against ".weight_zero_point" alone).
    const char last = name.back();
    for (auto suffix : kSuffixes)
        if (suffix.back() == last && endsWith(name, suffix)) return true;
    // Ascend W8A8's rotation applied before the quantised matmuls (vllm-ascend's MTP layer: self.rot of
    // the hidden state): a quantisation aid the BF16 model does not have, so not a parameter.
    return name == "rot.weight" || endsWith(name, ".rot.weight");
}

Category categorize(std::string_view name, int layer, bool mtpLayer)
{
    if (const auto outside = outsideLayersRole(name)) return *outside;
    if (layer < 0) return outsideRole(name);
    if (mtpLayer) return Category::Mtp;
    return layerRole(placeOf(name).rest).category;
}

namespace {

// Disagreements told once per kind, over the layers they concern ("layers 0–11 (12 layers): ..."), never a
// line per layer; a hostile config that disagrees at every one of 100,000 layers gets a few and a count.
std::vector<std::string> describeRuns(const std::map<std::string, std::vector<int>> &byKind)
{
    std::vector<std::pair<const std::string *, const std::vector<int> *>> order;
    for (const auto &[what, layers] : byKind)
        order.push_back({&what, &layers});
    // By the first layer concerned, then by what.
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &x, const auto &y) { return x.second->front() < y.second->front(); });
    std::vector<std::string> out;
    for (const auto &[whatPtr, layersPtr] : order) {
        const std::string &what = *whatPtr;
        const std::vector<int> &layers = *layersPtr;
        out.push_back(layers.size() == 1 ? "layer " + std::to_string(layers.front()) + ": " + what
                                         : "layers " + std::to_string(layers.front()) + "\u2013" +
                                               std::to_string(layers.back()) + " (" + std::to_string(layers.size()) +
                                               " layers): " + what);
    }
    constexpr std::size_t kShown = 32;
    if (out.size() > kShown) {
        const std::size_t more = out.size() - kShown;
        out.resize(kShown);
        out.push_back("and " + std::to_string(more) + " more disagreements like these");
    }
    return out;
}

void buildIndexShare(const Checkpoint &ckpt, CheckpointAnalysis &a)
{
    const ModelConfig &cfg = ckpt.config;
    IndexShareMap &map = a.indexShare;
    const int L = a.mainLayers;
    std::vector<IndexerRole> roles(static_cast<std::size_t>(L), IndexerRole::None);
    bool anyOnDisk = false;
    for (int i = 0; i < L; ++i)
        anyOnDisk = anyOnDisk || a.layers[static_cast<std::size_t>(i)].indexerWeights;

    // Every source the config gives, in the order of precedence of domain.md section 6.
    struct Source
    {
        IndexShareSource source;
        const char *key;
        std::vector<char> full;
    };
    std::vector<Source> sources;
    if (cfg.indexTopkPattern) {
        const std::string &p = *cfg.indexTopkPattern;
        const bool letters = std::all_of(p.begin(), p.end(), [](char c) { return c == 'F' || c == 'S'; });
        if (static_cast<int>(p.size()) == L && letters) {
            Source src{IndexShareSource::Pattern, "index_topk_pattern", {}};
            for (char c : p)
                src.full.push_back(c == 'F');
            sources.push_back(std::move(src));
        } else {
            map.mismatches.push_back("index_topk_pattern has " + std::to_string(p.size()) +
                                     (letters ? " letters" : " characters, not only F and S,") + " for " +
                                     std::to_string(L) + " layers; it was not used");
        }
    }
    if (cfg.indexerTypes) {
        if (static_cast<int>(cfg.indexerTypes->size()) == L) {
            Source src{IndexShareSource::IndexerTypes, "indexer_types", {}};
            for (const auto &t : *cfg.indexerTypes)
                src.full.push_back(t == "full");
            sources.push_back(std::move(src));
        } else {
            map.mismatches.push_back("indexer_types lists " + std::to_string(cfg.indexerTypes->size()) +
                                     " layers but the model has " + std::to_string(L) + "; it was not used");
        }
    }
    if (cfg.indexTopkFreq) {
        // An absent offset is 2, as the engines default it; ATOM's own rule max(i - offset, 0) with its
        // default 1 gives the same map, and differs by one layer only when the offset is given.
        const std::int64_t freq = *cfg.indexTopkFreq;
        const std::int64_t offset = cfg.indexSkipTopkOffset.value_or(2);
        Source src{IndexShareSource::Formula, "index_topk_freq", {}};
        for (int i = 0; i < L; ++i) {
            const bool full = std::max<std::int64_t>(i - offset + 1, 0) % freq == 0;
            src.full.push_back(full);
            if (cfg.indexSkipTopkOffset) {
                const bool atom = std::max<std::int64_t>(i - offset, 0) % freq == 0;
                if (atom) map.atomFull.push_back(i);
                if (atom != full) map.atomDiffers.push_back(i);
            }
        }
        sources.push_back(std::move(src));
    }
    if (map.atomDiffers.empty()) map.atomFull.clear();
    // DeepSeek-V4.1 (CSA2): the layers that compute a selection; the sparse layers after one reuse it.
    if (!cfg.indexSourceLayers.empty()) {
        Source src{IndexShareSource::SourceLayers, "index_source_layer_ids", std::vector<char>(static_cast<std::size_t>(L), 0)};
        for (const auto n : cfg.indexSourceLayers)
            if (n >= 0 && n < L) src.full[static_cast<std::size_t>(n)] = 1;
        sources.insert(sources.begin(), std::move(src));
    }

    if (!sources.empty()) {
        const Source &chosen = sources.front();
        map.source = chosen.source;
        for (int i = 0; i < L; ++i)
            roles[static_cast<std::size_t>(i)] =
                chosen.full[static_cast<std::size_t>(i)] ? IndexerRole::Full : IndexerRole::Shared;
        // vLLM builds its indexers from pattern / freq / offset, transformers from the first source:
        // every disagreement between two sources matters to someone.
        for (std::size_t k = 1; k < sources.size(); ++k) {
            std::string layers;
            int count = 0;
            for (int i = 0; i < L; ++i)
                if (sources[k].full[static_cast<std::size_t>(i)] !=
                    chosen.full[static_cast<std::size_t>(i)]) {
                    if (++count <= 16) layers += (layers.empty() ? "" : ", ") + std::to_string(i);
                }
            if (count)
                map.mismatches.push_back(std::string(chosen.key) + " and " + sources[k].key +
                                         " disagree at " + std::to_string(count) + " layer" +
                                         (count == 1 ? "" : "s") + " (" + layers +
                                         (count > 16 ? ", ..." : "") + "); " + chosen.key + " was used");
        }
    } else if (cfg.indexTopk || anyOnDisk) {
        map.source = IndexShareSource::EveryLayer;
        std::fill(roles.begin(), roles.end(), IndexerRole::Full);
    }

    // Only a sparse-attention layer can own an indexer: when the schedule names the DSA layers (GLM-5.3-Flash)
    // or DeepSeek-V4's compressed sparse layers (ratio 4), the other layers (linear attention, window only,
    // ratio 128) are out of the map whatever indexer_types says of them.
    std::string_view sparseKind;
    for (std::string_view kind :
         {"deepseek_sparse_attention", "compressed_sparse_attention", "minimax_m3_sparse", "qwen_sparse_attention"})
        if (static_cast<int>(cfg.layerTypes.size()) == L &&
            std::find(cfg.layerTypes.begin(), cfg.layerTypes.end(), kind) != cfg.layerTypes.end())
            sparseKind = kind;
    const bool typed = !sparseKind.empty();
    // Disagreements are told once per kind, over the layers they concern, never a line per layer.
    std::map<std::string, std::vector<int>> byKind;
    auto disagree = [&](int layer, const std::string &what) { byKind[what].push_back(layer); };
    int lastFull = -1;
    for (int i = 0; i < L; ++i) {
        LayerInfo &layer = a.layers[static_cast<std::size_t>(i)];
        layer.indexer = roles[static_cast<std::size_t>(i)];
        if (typed && cfg.layerTypes[static_cast<std::size_t>(i)] != sparseKind)
            layer.indexer = IndexerRole::None;
        if (layer.indexer == IndexerRole::Full) {
            map.full.push_back(i);
            lastFull = i;
            if (!layer.indexerWeights) disagree(i, "the map says full, but no self_attn.indexer.* tensors are on disk");
        } else if (layer.indexer == IndexerRole::Shared) {
            map.shared.push_back(i);
            layer.reusesLayer = lastFull;
            if (lastFull < 0) disagree(i, "shared, but no earlier full layer exists to reuse");
            if (layer.indexerWeights) disagree(i, "the map says shared, but self_attn.indexer.* tensors are on disk");
        } else if (layer.indexerWeights) {
            disagree(i, "indexer tensors on disk, but the config declares no indexer");
        }
    }
    for (auto &m : describeRuns(byKind))
        map.mismatches.push_back(std::move(m));
    // MTP layers carry their own indexer and never reuse the main model's selection.
    for (std::size_t i = static_cast<std::size_t>(L); i < a.layers.size(); ++i)
        a.layers[i].indexer = a.layers[i].indexerWeights ? IndexerRole::Full : IndexerRole::None;
}

// The prefix before a numbered block ("model.audio." of "model.audio.layers.3.x", "" of "layers.0.x"),
// and whether the block is a "layers" one (else "blocks"); nullopt for a name with neither.
struct BlockPrefix
{
    std::string_view prefix;
    bool layers = false;
};
std::optional<BlockPrefix> blockPrefix(std::string_view name)
{
    for (std::size_t at = 0; at < name.size();) {
        const std::size_t dot = name.find('.', at);
        if (dot == std::string_view::npos) break;
        const std::string_view seg = name.substr(at, dot - at);
        if (seg == "layers" || seg == "blocks") {
            const std::size_t next = name.find('.', dot + 1);
            if (next != std::string_view::npos && parseInt(name.substr(dot + 1, next - dot - 1)) >= 0)
                return BlockPrefix{name.substr(0, at), seg == "layers"};
            if (seg == "layers") return std::nullopt; // what follows "layers." is a layer's own naming
        }
        at = dot + 1;
    }
    return std::nullopt;
}

// Runs fn(firstShard, endShard, firstTensor) over every shard: in two halves of about as many tensors each,
// the later one on another thread, when there are enough tensors to repay the thread (Kimi-K3's 497k names
// in 96 shards), else at once. The first half's exception is the one thrown, as one pass would meet it first.
// split() runs once before two halves start (what the later half needs of its own), and not at all for one.
template <typename Fn, typename Split = void (*)()> void overShardHalves(const Checkpoint &ckpt, Fn fn, Split split = [] {})
{
    constexpr std::size_t kTensorsForTwo = 65536;
    const std::size_t total = ckpt.tensorCount();
    std::size_t mid = 0, before = 0;
    while (mid < ckpt.shards.size() && 2 * (before + ckpt.shards[mid].tensors.size()) <= total)
        before += ckpt.shards[mid++].tensors.size();
    // The shard that crosses the middle goes to the half it leaves nearer to even.
    if (mid < ckpt.shards.size() && 2 * before + ckpt.shards[mid].tensors.size() < total)
        before += ckpt.shards[mid++].tensors.size();
    if (total < kTensorsForTwo || mid == 0 || mid == ckpt.shards.size()) {
        fn(std::size_t(0), ckpt.shards.size(), std::size_t(0));
        return;
    }
    split(); // the halves are made (what the later one needs of its own, before it starts)
    auto later = std::async(std::launch::async, [&] { fn(mid, ckpt.shards.size(), before); });
    try {
        fn(std::size_t(0), mid, std::size_t(0));
    } catch (...) {
        later.wait();
        throw;
    }
    later.get();
}

// outsideLayersRole() of every tensor, in shard order, asked once: names share a few prefixes before
// "layers.", so the encoder part is looked up once per prefix (497k names in Kimi-K3, 4 passes). Each
// name's answer is its own (the prefix's, or the name's where an MTP block lies further on, or past 4,096
// prefixes: the same), so the shards are read in two halves at once.
std::vector<std::optional<Category>> outsideRolesOf(const Checkpoint &ckpt)
{
    std::vector<std::optional<Category>> out;
    assignPopulated(out, ckpt.tensorCount());
    overShardHalves(ckpt, [&](std::size_t firstShard, std::size_t endShard, std::size_t k) {
        std::unordered_map<std::string_view, std::optional<Category>> byPrefix;
        // The previous name's prefix first: consecutive names nearly always share it ("model.layers."). A
        // name that starts with it followed by "layers." has its first ".layers." where that one had (an
        // earlier one would lie in the shared characters, and so would have been the previous name's first).
        std::string_view lastPrefix;
        std::optional<Category> lastRole;
        for (std::size_t sh = firstShard; sh < endShard; ++sh)
            for (const auto &t : ckpt.shards[sh].tensors) {
                const std::string_view name = t.name;
                std::optional<Category> &role = out[k++];
                std::size_t at;
                if (!lastPrefix.empty() && name.starts_with(lastPrefix) &&
                    name.substr(lastPrefix.size()).starts_with("layers.")) {
                    at = lastPrefix.size() - 1;
                    role = lastRole;
                } else {
                    at = startsWith(name, "layers.") ? 0 : name.find(".layers.");
                    if (at == std::string_view::npos || byPrefix.size() > 4096) {
                        role = outsideLayersRole(name);
                        continue;
                    }
                    const std::string_view prefix = name.substr(0, at + 1);
                    auto it = byPrefix.find(prefix);
                    if (it == byPrefix.end()) it = byPrefix.emplace(prefix, outsideLayersRole(prefix)).first;
                    role = it->second;
                    if (at > 0) lastPrefix = prefix, lastRole = role;
                }
                // The prefix decides unless the name is an MTP block's further on (".mtp." past the prefix).
                if (role) continue;
                // "mtp" looked for, then its dot: a name holds far fewer m's than dots, and each candidate was a
                // memchr call.
                bool mtpFurther = false;
                for (std::size_t m = name.find("mtp", at + 1); m != std::string_view::npos && !mtpFurther;
                     m = name.find("mtp", m + 1))
                    mtpFurther = name[m - 1] == '.' &&
                                 (name.substr(m).starts_with("mtp.") || name.substr(m).starts_with("mtp_layers."));
                if (mtpFurther) role = outsideLayersRole(name);
            }
    });
    return out;
}

// Towers by their position (CheckpointAnalysis::towerPrefixes). The decoder is the "layers.N" prefix whose
// run of layer numbers is num_hidden_layers long (the only one), else the one holding the most elements;
// a tower is any other non-empty prefix with numbered layers or blocks of its own and fewer elements than
// the decoder (a language model beside a vision tower with more, smaller tensors stays the decoder, and an
// encoder-decoder whose decoder is the smaller half is left as it is). An MTP block or a tower the encoder
// table names is claimed before this.
std::vector<std::string> findTowerPrefixes(const Checkpoint &ckpt, const std::vector<std::optional<Category>> &outside)
{
    struct Count
    {
        std::uint64_t elements = 0;
        bool layers = false;
        int maxLayer = -1;
    };
    // Counted in two halves of the shards at once (overShardHalves), then joined: sums, flags and maxima.
    std::map<std::string_view, Count> counts, laterCounts;
    overShardHalves(ckpt, [&](std::size_t firstShard, std::size_t endShard, std::size_t k) {
        std::map<std::string_view, Count> &mine = firstShard == 0 ? counts : laterCounts;
        std::string_view lastPrefix;
        Count *last = nullptr; // the previous name's prefix's count (map nodes do not move)
        bool lastLayers = false;
        for (std::size_t sh = firstShard; sh < endShard; ++sh)
            for (const auto &t : ckpt.shards[sh].tensors) {
                if (outside[k++]) continue;
                const std::string_view name = t.name;
                // Consecutive names nearly always share the previous one's prefix and its "layers." or
                // "blocks." word: then blockPrefix() would stop at the same place, as every segment before
                // it is the same (only the number after the word is read).
                if (last) {
                    const std::string_view word = lastLayers ? "layers." : "blocks.";
                    if (name.size() > lastPrefix.size() + word.size() && name.starts_with(lastPrefix) &&
                        name.substr(lastPrefix.size(), word.size()) == word) {
                        const std::size_t from = lastPrefix.size() + word.size();
                        const std::size_t dot = name.find('.', from);
                        const int n = dot == std::string_view::npos ? -1 : parseInt(name.substr(from, dot - from));
                        if (n >= 0) {
                            last->elements += t.numel;
                            if (lastLayers) last->maxLayer = std::max(last->maxLayer, n);
                            continue;
                        }
                    }
                }
                if (const auto b = blockPrefix(name)) {
                    if (!last || b->prefix != lastPrefix) last = &mine[b->prefix], lastPrefix = b->prefix;
                    lastLayers = b->layers;
                    auto &c = *last;
                    c.elements += t.numel;
                    if (b->layers) {
                        c.layers = true;
                        const int n = placeOf(name.substr(b->prefix.size())).layer;
                        c.maxLayer = std::max(c.maxLayer, n);
                    }
                }
            }
    });
    for (const auto &[prefix, later] : laterCounts) {
        Count &c = counts[prefix];
        c.elements += later.elements;
        c.layers = c.layers || later.layers;
        c.maxLayer = std::max(c.maxLayer, later.maxLayer);
    }
    std::string_view decoder;
    bool found = false;
    if (const auto L = ckpt.config.numHiddenLayers) {
        int matches = 0;
        for (const auto &[prefix, c] : counts)
            if (c.layers && static_cast<std::int64_t>(c.maxLayer) + 1 == *L) decoder = prefix, ++matches;
        found = matches == 1;
    }
    if (!found) {
        std::uint64_t most = 0;
        for (const auto &[prefix, c] : counts)
            if (c.layers && c.elements > most) decoder = prefix, most = c.elements, found = true;
    }
    std::vector<std::string> out;
    if (!found) return out; // no decoder layers to stand beside
    const std::uint64_t decoderElements = counts[decoder].elements;
    // A prefix that says it is a language model or a decoder is never taken for a tower.
    const auto textSide = [](std::string_view prefix) {
        for (std::string_view seg : {"decoder.", "language_model.", "llm.", "text_model.", "lm."})
            if (prefix.starts_with(seg) || prefix.find("." + std::string(seg)) != std::string_view::npos) return true;
        return false;
    };
    for (const auto &[prefix, c] : counts)
        if (!prefix.empty() && prefix != decoder && !decoder.starts_with(prefix) && c.elements < decoderElements &&
            !textSide(prefix))
            out.emplace_back(prefix);
    return out;
}

// The active parameters of host-resident tables: the rows a token reads from each (the config's
// lookups per token x the row width), else none; what was done, as the activation note's tail.
std::string activeHostRows(const ModelConfig &cfg, CheckpointAnalysis &a)
{
    if (a.hostTables.empty()) return {};
    // A layer's tables are one memory (Qwen3.8 splits its n-gram table in 128 tensors of the same width):
    // a token reads the config's rows from each layer's memory.
    std::set<std::pair<int, std::uint64_t>> memories; // (layer, row width)
    for (const auto &t : a.hostTables)
        memories.insert({t.layer, t.width});
    std::uint64_t active = 0;
    if (cfg.hostRowsPerToken)
        for (const auto &[layer, width] : memories)
            active += static_cast<std::uint64_t>(*cfg.hostRowsPerToken) * width;
    a.budget.activeByCategory[static_cast<std::size_t>(Category::HostTables)] = active;
    const std::string what = std::to_string(memories.size()) + " host-resident n-gram " +
                             (memories.size() == 1 ? "memory" : "memories");
    if (cfg.hostRowsPerToken)
        return "; of the " + what + " only the rows a token reads (" + std::to_string(*cfg.hostRowsPerToken) +
               " rows each: " + cfg.hostRowsFrom + ")";
    return "; the " + what + " count no active parameters (config.json does not say how many rows a token reads)";
}

// Where each tensor sits, found once (countLayers) and read again by the walk in analyze(): its layer (-1
// outside the decoder's layers) and where its name inside the layer starts.
struct NamePlace
{
    std::int32_t layer = -1;
    std::uint32_t rest = 0;
};

// The layers the model has: num_hidden_layers from the config (or, without it, the run of layer
// numbers 0, 1, 2, ... found on disk), then the MTP layers as the tensors show them: the run that
// follows on disk, or as far as num_nextn_predict_layers reaches when its layers are there with gaps.
// A config whose MTP count the tensors do not bear out is said once in `note` (DeepSeek-V4-Flash-0731
// holds mtp.0-mtp.2 under num_nextn_predict_layers: 1; a config naming MTP modules none of which are on
// disk).
int countLayers(const Checkpoint &ckpt, const CheckpointAnalysis &a, const std::vector<std::optional<Category>> &roles,
                int &mainLayers, std::vector<NamePlace> &places, std::string *note = nullptr)
{
    // Layer numbers met, as marks (asked of every tensor: no tree insert per name).
    std::vector<char> present(static_cast<std::size_t>(kMaxConfigLayers + 2 * kMaxConfigMtpLayers), 0);
    const auto has = [&](std::int64_t n) {
        return n >= 0 && n < static_cast<std::int64_t>(present.size()) && present[static_cast<std::size_t>(n)];
    };
    std::set<int> mtpBlocks;
    assignPopulated(places, ckpt.tensorCount());
    // Each tensor's place is its own: the shards are read in two halves at once, each marking the layers and
    // MTP blocks it meets, joined after.
    std::vector<char> laterPresent(present.size(), 0);
    std::set<int> laterMtpBlocks;
    overShardHalves(ckpt, [&](std::size_t firstShard, std::size_t endShard, std::size_t k) {
        std::vector<char> &marks = firstShard == 0 ? present : laterPresent;
        std::set<int> &blocks = firstShard == 0 ? mtpBlocks : laterMtpBlocks;
        for (std::size_t sh = firstShard; sh < endShard; ++sh)
            for (const auto &t : ckpt.shards[sh].tensors) {
                NamePlace &at = places[k];
                const auto outside = a.outsideLayersGiven(t.name, roles[k++]);
                if (outside) {
                    if (outside == Category::Mtp)
                        if (const auto block = mtpBlockPlace(t.name); block && block->layer < kMaxConfigMtpLayers)
                            blocks.insert(block->layer);
                    continue;
                }
                const TensorPlace place = placeOf(t.name);
                at = {place.layer, place.layer >= 0 ? static_cast<std::uint32_t>(place.rest.data() - t.name.data()) : 0u};
                if (place.layer >= 0 && place.layer < kMaxConfigLayers + kMaxConfigMtpLayers)
                    marks[static_cast<std::size_t>(place.layer)] = 1;
            }
    });
    for (std::size_t i = 0; i < present.size(); ++i)
        present[i] |= laterPresent[i];
    mtpBlocks.merge(laterMtpBlocks);
    auto runFrom = [&](int first, int limit) {
        int n = 0;
        while (n < limit && has(first + n))
            ++n;
        return n;
    };
    const ModelConfig &cfg = ckpt.config;
    if (!cfg.numHiddenLayers) {
        mainLayers = runFrom(0, static_cast<int>(kMaxConfigLayers));
        return mainLayers;
    }
    mainLayers = static_cast<int>(*cfg.numHiddenLayers);
    // MTP blocks named apart (mtp.N.*) follow the decoder layers, as vLLM places them.
    for (int block : mtpBlocks)
        if (mainLayers + block < static_cast<int>(present.size())) present[static_cast<std::size_t>(mainLayers + block)] = 1;
    int extra = runFrom(mainLayers, static_cast<int>(kMaxConfigMtpLayers));
    if (cfg.numNextnPredictLayers) {
        const std::int64_t declared = std::clamp<std::int64_t>(*cfg.numNextnPredictLayers, 0, kMaxConfigMtpLayers);
        for (int i = 0; i < static_cast<int>(declared); ++i)
            if (has(mainLayers + i)) extra = std::max(extra, i + 1);
        const auto d = std::to_string(*cfg.numNextnPredictLayers);
        if (note && extra != *cfg.numNextnPredictLayers)
            *note = extra == 0 ? "config.json declares " + d + " MTP layer" + (d == "1" ? "" : "s") + " (" +
                                     cfg.mtpCountKey + "); none is on disk"
                               : "the checkpoint holds " + std::to_string(extra) + " MTP block" + (extra == 1 ? "" : "s") +
                                     " where " + cfg.mtpCountKey + " says " + d + ": counted as the tensors show them";
    }
    return mainLayers + extra;
}

} // namespace

std::uint64_t CheckpointAnalysis::parametersOf(const TensorInfo &t) const
{
    if (isQuantScale(t.name, t.dtype) || tableTensors.count(t.name)) return 0;
    return packedElementsOf(t).value_or(t.numel);
}

std::optional<std::uint64_t> CheckpointAnalysis::packedElementsOf(const TensorInfo &t) const
{
    if (t.end == t.begin) return std::nullopt; // no bytes: nothing packed, and no place of its own
    const auto it = std::lower_bound(packedElements.begin(), packedElements.end(), t, [](const PackedCount &p, const TensorInfo &x) {
        return p.shard != x.shard ? p.shard < x.shard : p.begin < x.begin;
    });
    if (it == packedElements.end() || it->shard != t.shard || it->begin != t.begin) return std::nullopt;
    return it->elements;
}

namespace {

// How many logical elements a stored tensor holds (domain.md section 10); nullopt when it is not packed.
class Unpacker
{
public:
    Unpacker(const Checkpoint &ckpt) : m_cfg(ckpt.config.quantization)
    {
        // NVFP4 (ModelOpt): a U8 weight beside an F8_E4M3 weight_scale (one per 16 values).
        m_blockScales.reserve(ckpt.tensorCount()); // pages are touched only as far as scales fill them
        for (const auto &s : ckpt.shards)
            for (const auto &t : s.tensors)
                if (t.dtype == Dtype::F8_E4M3 && endsWith(t.name, ".weight_scale"))
                    m_fp4Modules.insert(std::string_view(t.name).substr(0, t.name.size() - 13), 1);
                else if (const std::string_view module = blockScaleModule(t); module.data())
                    m_blockScales.push_back({hashOf(module), static_cast<std::uint32_t>(m_blockScales.size()), &t});
        sortBlockScales();
        compileTargets();
    }

    // `next`: the tensor after t in its shard, if any (its block scale, most often: see blockScaleOf).
    std::optional<std::uint64_t> logical(const TensorInfo &t, const TensorInfo *next)
    {
        if (t.dtype == Dtype::U8 && endsWith(t.name, "_blocks")) return t.numel * 2; // MXFP4: two per byte
        if (t.dtype == Dtype::U8 && endsWith(t.name, ".weight") &&
            m_fp4Modules.contains(std::string_view(t.name).substr(0, t.name.size() - 7)))
            return t.numel * 2;                                    // NVFP4
        if (fp4Pairs(t, next)) return t.numel * 2;                 // DeepSeek-V4 experts
        if (const int bits = mlxBits(t); bits > 0 && (t.numel * 32) % static_cast<std::uint64_t>(bits) == 0)
            return t.numel * 32 / static_cast<std::uint64_t>(bits);
        if (t.dtype == Dtype::I32 && endsWith(t.name, ".qweight")) // AWQ / GPTQ
            return t.numel * static_cast<std::uint64_t>(32 / (m_cfg.bits ? m_cfg.bits : 4));
        if ((t.dtype == Dtype::I32 || t.dtype == Dtype::U8) && endsWith(t.name, ".weight_packed")) {
            // compressed-tensors: INT4 in I32 words, MXFP4 in bytes.
            const int bits = bitsFor(std::string_view(t.name).substr(0, t.name.size() - 14));
            const int word = t.dtype == Dtype::I32 ? 32 : 8;
            if (bits == 0 || bits > word || word % bits != 0) {
                if (m_unknown++ == 0) m_unknownExample = t.name;
                return std::nullopt;
            }
            return t.numel * static_cast<std::uint64_t>(word / bits);
        }
        return std::nullopt;
    }
    // What a parameter tensor is stored as, in the words the Overview shows: "MXFP4", "NVFP4 g16",
    // "INT4 g64 symmetric", "INT4 (awq)", "FP8 e4m3 128x128", or its dtype.
    // The words live in this unpacker until the next call (no string made per tensor in the common case).
    const std::string &formatOf(const TensorInfo &t, const TensorInfo *next)
    {
        if (t.dtype == Dtype::U8 && endsWith(t.name, "_blocks")) return keep("MXFP4");
        if (t.dtype == Dtype::U8 && endsWith(t.name, ".weight") &&
            m_fp4Modules.contains(std::string_view(t.name).substr(0, t.name.size() - 7)))
            return keep("NVFP4 g16");
        // The words of the formats below depend on the config alone: made once each, not per tensor.
        if (t.dtype == Dtype::I32 && endsWith(t.name, ".qweight")) {
            if (m_awqFormat.empty())
                m_awqFormat = "INT" + std::to_string(m_cfg.bits ? m_cfg.bits : 4) + " (" +
                              (m_cfg.method.empty() ? std::string("AWQ/GPTQ") : m_cfg.method) + ")";
            return m_awqFormat;
        }
        if (fp4Pairs(t, next)) return keep("FP4 e2m1 g32 (I8 pairs, E8M0 scales)");
        if (const int bits = mlxBits(t); bits > 0) {
            auto &words = m_mlxFormats[bits];
            if (words.empty())
                words = "MLX " + std::to_string(bits) + "-bit" +
                        (m_cfg.mlxGroupSize ? " g" + std::to_string(m_cfg.mlxGroupSize) : std::string());
            return words;
        }
        if ((t.dtype == Dtype::I32 || t.dtype == Dtype::U8) && endsWith(t.name, ".weight_packed")) {
            const QuantGroup *g = groupFor(std::string_view(t.name).substr(0, t.name.size() - 14));
            if (!g || !g->numBits) return keep("packed I32 (bits unknown)");
            auto &words = m_groupFormats[g];
            if (words.empty()) {
                words = (g->type == "float" ? "FP" : "INT") + std::to_string(g->numBits);
                if (g->groupSize > 0) words += " g" + std::to_string(g->groupSize);
                words += g->symmetric ? " symmetric" : " asymmetric";
            }
            return words;
        }
        if (t.dtype == Dtype::F8_E4M3 && t.shape.size() == 2) {
            const TensorInfo *scale =
                blockScaleOf(std::string_view(t.name).substr(0, t.name.size() - (endsWith(t.name, ".weight") ? 7 : 0)), next);
            const Shape *scaleShape = scale ? &scale->shape : nullptr;
            if (scaleShape && scaleShape->size() == 2 && (*scaleShape)[0] && (*scaleShape)[1]) {
                // The block edge b with ceil(n / b) scales along a dimension: the power of two that
                // fits (576 rows in 5 blocks are blocks of 128, the last one partial).
                auto block = [](std::uint64_t n, std::uint64_t scales) {
                    const std::uint64_t least = (n + scales - 1) / scales;
                    std::uint64_t b = 1;
                    while (b < least)
                        b *= 2;
                    return (n + b - 1) / b == scales ? b : least;
                };
                const std::uint64_t rows = block(t.shape[0], (*scaleShape)[0]),
                                    cols = block(t.shape[1], (*scaleShape)[1]);
                // Power-of-two scales (E8M0, or its bytes in U8): MXFP8 when one scale covers 32 values
                // of a row (MiniMax-M3), else block FP8 with UE8M0 scales (DeepSeek-V4).
                const bool e8m0 = scale->dtype == Dtype::F8_E8M0 || scale->dtype == Dtype::U8;
                if (e8m0 && rows == 1 && cols == 32) return keep("MXFP8 (FP8 e4m3, E8M0 per 32)");
                // Nearly every FP8 weight of a checkpoint has the same blocks: the words are made once.
                if (rows != m_lastBlock[0] || cols != m_lastBlock[1] || e8m0 != (m_lastBlock[2] != 0)) {
                    m_lastBlock = {rows, cols, e8m0 ? 1u : 0u};
                    m_lastBlockFormat = "FP8 e4m3 " + std::to_string(rows) + "x" + std::to_string(cols) +
                                        (e8m0 ? " ue8m0" : "");
                }
                return m_lastBlockFormat;
            }
            return keep("FP8 e4m3");
        }
        return keep(dtypeName(t.dtype));
    }
    // DeepSeek-V4's FP4 experts: two e2m1 values per I8 byte, an F8_E8M0 ".scale" per 32 logical values.
    bool fp4Pairs(const TensorInfo &t, const TensorInfo *next) const
    {
        if (t.dtype != Dtype::I8 || !endsWith(t.name, ".weight") || t.shape.empty()) return false;
        const TensorInfo *scale = blockScaleOf(std::string_view(t.name).substr(0, t.name.size() - 7), next);
        if (!scale || scale->dtype != Dtype::F8_E8M0 || scale->shape.empty()) return false;
        return scale->shape.back() * 32 == t.shape.back() * 2;
    }
    // The module whose block scales t holds ("X" of X.weight_scale_inv, or of an F8_E8M0 X.scale as
    // DeepSeek-V4's w1.scale), or a null view.
    static std::string_view blockScaleModule(const TensorInfo &t)
    {
        if (endsWith(t.name, ".weight_scale_inv")) return std::string_view(t.name).substr(0, t.name.size() - 17);
        if (t.dtype == Dtype::F8_E8M0 && endsWith(t.name, ".scale")) return std::string_view(t.name).substr(0, t.name.size() - 6);
        return {};
    }
    // Every block scale, sorted by its module's hash, then its module, then the order found: a look-up is a
    // binary search that lands on the module's first scale found (the one kept when a module has two), and one
    // pass over neighbours says whether any module has two. 16 bytes a scale: the hash table this replaces held
    // 32 a slot at most 70 % full and grew by doubling, 8 MB of fresh pages for GLM-5's 57k scales.
    struct BlockScale
    {
        std::uint32_t hash;
        std::uint32_t order;
        const TensorInfo *scale;
    };
    static std::uint32_t hashOf(std::string_view module)
    {
        const std::uint64_t h = std::hash<std::string_view>{}(module); // 32 bits where size_t is
        return static_cast<std::uint32_t>(h ^ (h >> 32));
    }
    // Names are compared only between equal hashes: a header that crafts colliding names costs a log factor of
    // comparisons, never a walk along every name that shares a hash.
    static bool before(const BlockScale &a, const BlockScale &b)
    {
        if (a.hash != b.hash) return a.hash < b.hash;
        if (const int c = blockScaleModule(*a.scale).compare(blockScaleModule(*b.scale)); c != 0) return c < 0;
        return a.order < b.order;
    }
    void sortBlockScales()
    {
        std::sort(m_blockScales.begin(), m_blockScales.end(), before);
        for (std::size_t i = 1; i < m_blockScales.size() && m_blockScalesUnique; ++i)
            m_blockScalesUnique = m_blockScales[i].hash != m_blockScales[i - 1].hash ||
                                  blockScaleModule(*m_blockScales[i].scale) != blockScaleModule(*m_blockScales[i - 1].scale);
    }
    // The block scales of `module`. A shard's names are sorted, so X.weight_scale_inv mostly follows
    // X.weight: when no module has two scale tensors, a `next` that is the module's scale is the one the
    // table holds, and the look-up (a cache miss in a table of 60k names) is skipped.
    const TensorInfo *blockScaleOf(std::string_view module, const TensorInfo *next) const
    {
        if (next && m_blockScalesUnique && blockScaleModule(*next) == module) return next;
        const std::uint32_t h = hashOf(module);
        const auto it = std::lower_bound(m_blockScales.begin(), m_blockScales.end(), module,
                                         [h](const BlockScale &e, std::string_view m) {
                                             return e.hash != h ? e.hash < h : blockScaleModule(*e.scale) < m;
                                         });
        return it != m_blockScales.end() && it->hash == h && blockScaleModule(*it->scale) == module ? it->scale : nullptr;
    }
    // MLX: a U32 weight holds 32 / bits values per word, the bits its module's override or the config's
    // (mlx_lm utils quantize: "quantization": {"group_size", "bits", per-module entries}); 0 otherwise.
    int mlxBits(const TensorInfo &t) const
    {
        if (!m_cfg.mlxBits || t.dtype != Dtype::U32 || !endsWith(t.name, ".weight")) return 0;
        if (!m_cfg.mlxModuleBits.empty())
            if (auto it = m_cfg.mlxModuleBits.find(std::string(t.name.substr(0, t.name.size() - 7)));
                it != m_cfg.mlxModuleBits.end())
                return it->second;
        return m_cfg.mlxBits;
    }
    std::uint64_t unknown() const { return m_unknown; }
    const std::string &unknownExample() const { return m_unknownExample; }
    // One sentence per "re:" target the matcher refuses (such a target matches no module).
    const std::vector<std::string> &refusals() const { return m_refusals; }

private:
    // The bits of the first config group whose targets name this module ("Linear": any; "re:": a
    // regular expression matched from the start of the module name, as compressed-tensors does).
    int bitsFor(std::string_view module)
    {
        const QuantGroup *g = groupFor(module);
        return g ? g->numBits : 0;
    }

    const QuantGroup *groupFor(std::string_view module)
    {
        for (const auto &g : m_cfg.groups) {
            for (const auto &target : g.targets) {
                if (target == "Linear") return &g;
                if (auto it = m_patterns.find(target);
                    it != m_patterns.end() && it->second && it->second->matchesPrefix(module))
                    return &g;
            }
        }
        return m_cfg.groups.size() == 1 && m_cfg.groups.front().targets.empty() ? &m_cfg.groups.front()
                                                                                : nullptr;
    }

    // Every "re:" target once, up front: the config is the file's, so its patterns go to a matcher that
    // takes linear time (std::regex backtracks: "(.*a){12}c" held a 40-character name for minutes),
    // and a target it refuses is said whether or not a packed weight would have reached it.
    void compileTargets()
    {
        constexpr std::size_t kShownRefusals = 16;
        std::size_t refused = 0;
        for (const auto &g : m_cfg.groups)
            for (const auto &target : g.targets) {
                if (!startsWith(target, "re:") || m_patterns.count(target)) continue;
                auto compiled = ModulePattern::compile(std::string_view(target).substr(3),
                                                       "the quantization target '" + target + "'");
                if (auto *pattern = std::get_if<ModulePattern>(&compiled)) {
                    m_patterns.emplace(target, std::move(*pattern));
                    continue;
                }
                m_patterns.emplace(target, std::nullopt);
                if (refused++ < kShownRefusals)
                    m_refusals.push_back(std::get<std::string>(compiled) + "; it matches no module");
            }
        if (refused > kShownRefusals)
            m_refusals.push_back("and " + std::to_string(refused - kShownRefusals) +
                                 " more quantization targets refused like these");
    }

    const QuantizationConfig &m_cfg;
    // Views into the checkpoint's own names (it outlives this Unpacker): no copies of 118k names.
    // Rows, columns, E8M0 of the last FP8 block format; none at first (a zero-size weight gives 0 x 0).
    std::array<std::uint64_t, 3> m_lastBlock{UINT64_MAX, UINT64_MAX, UINT64_MAX};
    std::string m_lastBlockFormat;
    std::string m_format; // what formatOf() said last
    std::string m_awqFormat;                                  // AWQ / GPTQ words, made at the first
    std::map<int, std::string> m_mlxFormats;                  // MLX words by bits
    std::map<const QuantGroup *, std::string> m_groupFormats; // compressed-tensors words by group
    const std::string &keep(std::string_view words)
    {
        m_format.assign(words.data(), words.size());
        return m_format;
    }
    NameMap<char> m_fp4Modules;                      // modules with an NVFP4 weight_scale
    std::vector<BlockScale> m_blockScales;           // sorted (sortBlockScales)
    bool m_blockScalesUnique = true;                 // no module met a second scale tensor
    std::map<std::string, std::optional<ModulePattern>> m_patterns; // "re:" target -> pattern (none: refused)
    std::vector<std::string> m_refusals;
    std::uint64_t m_unknown = 0;
    std::string m_unknownExample;
};

// Which main layers the config declares MoE (domain.md section 10's dialects), when it says.
std::optional<std::vector<char>> declaredMoeLayers(const ModelConfig &cfg, int layers)
{
    std::vector<char> moe(static_cast<std::size_t>(layers), 0);
    if (static_cast<int>(cfg.mlpLayerTypes.size()) == layers) {
        for (int i = 0; i < layers; ++i)
        {
            const std::string &t = cfg.mlpLayerTypes[static_cast<std::size_t>(i)];
            moe[static_cast<std::size_t>(i)] = t == "sparse" || t == "moe" || t == "hash_moe";
        }
        return moe;
    }
    if (cfg.decoderSparseStep && cfg.nRoutedExperts && *cfg.nRoutedExperts > 0) {
        for (int i = 0; i < layers; ++i) {
            const bool only =
                std::find(cfg.mlpOnlyLayers.begin(), cfg.mlpOnlyLayers.end(), i) != cfg.mlpOnlyLayers.end();
            moe[static_cast<std::size_t>(i)] = !only && (i + 1) % *cfg.decoderSparseStep == 0;
        }
        return moe;
    }
    if (cfg.firstKDenseReplace && cfg.nRoutedExperts) {
        for (int i = 0; i < layers; ++i)
            moe[static_cast<std::size_t>(i)] = i >= *cfg.firstKDenseReplace;
        return moe;
    }
    return std::nullopt;
}

// Layer kinds come from the config where it declares them (domain.md section 10), from the tensors
// on disk otherwise; every layer on which the two disagree is named.
void layerKindsFromConfig(const ModelConfig &cfg, CheckpointAnalysis &a)
{
    const auto declared = declaredMoeLayers(cfg, a.mainLayers);
    if (!declared) return;
    std::string layers;
    int count = 0;
    for (int i = 0; i < a.mainLayers; ++i) {
        const bool moe = a.layers[static_cast<std::size_t>(i)].kind == LayerKind::Moe;
        if (moe != static_cast<bool>((*declared)[static_cast<std::size_t>(i)]) && ++count <= 16)
            layers += (layers.empty() ? "" : ", ") + std::to_string(i) +
                      (moe ? " (moe on disk)" : " (dense on disk)");
    }
    if (count)
        a.warnings.push_back("config.json's dense/MoE layers disagree with the tensors at " +
                             std::to_string(count) + " layer" + (count == 1 ? "" : "s") + ": " + layers +
                             (count > 16 ? ", ..." : "") + "; the layers are shown as config.json declares");
    for (int i = 0; i < a.mainLayers; ++i)
        a.layers[static_cast<std::size_t>(i)].kind =
            (*declared)[static_cast<std::size_t>(i)] ? LayerKind::Moe : LayerKind::Dense;
}

// What a layer's tensors show about its kind.
enum DiskMark : unsigned {
    kLinearMixer = 1,  // a recurrent mixer: A_log, dt_bias, short convolutions (KDA, Gated DeltaNet, Mamba-2)
    kCompressor = 2,   // DeepSeek-V4 attn.compressor.*
    kHashTable = 4,    // gate.tid2eid
    kAttention = 8,    // any other attention tensor
    kMla = 16,         // kv_a_proj_with_mqa: multi-head latent attention
    kV4Attention = 32, // DeepSeek-V4's shared K=V projection (attn.wkv)
};

unsigned diskMarks(std::string_view rest, Category role)
{
    unsigned m = 0;
    const bool mixer = role == Category::Attention || role == Category::LinearAttention;
    if (role == Category::LinearAttention || (mixer && (rest.ends_with(".A_log") || rest.ends_with(".dt_bias") ||
                                                        rest.find("conv1d") != std::string_view::npos)))
        m |= kLinearMixer;
    else if (role == Category::Attention)
        m |= kAttention;
    if (rest.starts_with("attn.compressor.")) m |= kCompressor;
    if (role == Category::RouterTables && rest.ends_with("tid2eid")) m |= kHashTable; // not n-gram hash constants
    if (rest.find("kv_a_proj_with_mqa") != std::string_view::npos || rest.starts_with("attn_kv_a_mqa.")) m |= kMla;
    if (rest == "attn.wkv.weight") m |= kV4Attention;
    return m;
}

// Each layer's kind, decided once (domain.md section 15). The schedule's word where it names one, held
// with the tensors: DeepSeek-V4's compress ratio; a recurrent word (or recurrent tensors), sized by the
// config as KDA (linear_attn_config), Gated DeltaNet (linear_* dims) or Mamba-2 ("mamba"); MLA where
// kv_a_proj_with_mqa is on disk (or kv_lora_rank says so and the layer's tensors are absent); sliding where
// the schedule slides and a window is given; "none" where the schedule says none.
void decideMixers(const ModelConfig &cfg, const std::vector<unsigned> &seen, CheckpointAnalysis &a)
{
    const int L = a.mainLayers;
    const bool typed = static_cast<int>(cfg.layerTypes.size()) == L;
    const bool allSliding = cfg.slidingWindow && cfg.useSlidingWindow.value_or(true) && !typed;
    const bool kdaDims = cfg.kdaNumHeads && cfg.kdaHeadDim;
    const bool gdnDims = cfg.linearNumValueHeads && cfg.linearKeyHeadDim && cfg.linearValueHeadDim;
    for (int i = 0; i < a.layerCount; ++i) {
        const auto u = static_cast<std::size_t>(i);
        LayerInfo &layer = a.layers[u];
        const unsigned m = u < seen.size() ? seen[u] : 0;
        const bool main = i < L;
        const std::string &word = layer.attention; // the schedule's word, or what the tensors showed
        layer.attentionOnDisk = (m & (kAttention | kLinearMixer | kMla | kV4Attention)) != 0;
        if (u < cfg.compressRatios.size() && (main || (m & kV4Attention))) {
            layer.compressRatio = cfg.compressRatios[u];
            layer.mixer = layer.compressRatio == 0   ? MixerKind::Window
                          : layer.compressRatio <= 4 ? MixerKind::CompressedSparse
                                                     : MixerKind::HeavilyCompressed;
        } else if (const MixerKindRow *row = mixerKindOfWord(word); row && row->recurrent) {
            // "linear_attention" is sized by what the config gives; a word of its own names its kind.
            // A kind the config cannot size (no linear_attn_config, no linear_* dims) is a recurrent
            // state of unknown size: the cache counts none of it rather than reading absent keys.
            const MixerKind named = row->kind != MixerKind::Linear ? row->kind
                                    : kdaDims                      ? MixerKind::Kda
                                    : gdnDims                      ? MixerKind::GatedDeltaNet
                                                                   : MixerKind::Linear;
            layer.mixer = (named == MixerKind::Kda && !kdaDims) || (named == MixerKind::GatedDeltaNet && !gdnDims)
                              ? MixerKind::Linear
                              : named;
        } else if (main && typed && row && row->kind == MixerKind::None) {
            layer.mixer = MixerKind::None;
        } else if (m & kV4Attention) {
            layer.mixer = MixerKind::Window; // DeepSeek-V4 attention whose ratio the config does not give
        } else if ((m & kMla) || (!(m & kAttention) && (cfg.kvLoraRank || (row && row->kind == MixerKind::Mla)))) {
            layer.mixer = MixerKind::Mla;
        } else if (main && cfg.slidingWindow && ((row && row->kind == MixerKind::Sliding) || allSliding)) {
            layer.mixer = MixerKind::Sliding;
        } else {
            layer.mixer = MixerKind::Full;
        }
    }
}

// A partial download (one of Qwen3-235B's 118 shards): the main layers with no tensor on disk, when some
// layer has one, are said once and sized nowhere: no mixer (the cache and the plan skip them), no
// indexer (no index keys), out of the IndexShare lists.
void markLayersWithoutTensors(CheckpointAnalysis &a)
{
    std::vector<int> missing;
    bool any = false;
    for (int i = 0; i < a.mainLayers; ++i) {
        const bool on = a.layers[static_cast<std::size_t>(i)].onDisk();
        any = any || on;
        if (!on) missing.push_back(i);
    }
    if (!any || missing.empty()) return;
    for (const int i : missing) {
        LayerInfo &l = a.layers[static_cast<std::size_t>(i)];
        l.mixer = MixerKind::None;
        l.indexer = IndexerRole::None;
        l.reusesLayer = -1;
    }
    const auto drop = [&](std::vector<int> &v) {
        v.erase(std::remove_if(v.begin(), v.end(),
                               [&](int i) { return std::binary_search(missing.begin(), missing.end(), i); }),
                v.end());
    };
    drop(a.indexShare.full);
    drop(a.indexShare.shared);
    drop(a.indexShare.atomFull);
    // "layers 1–93" or "layers 3, 7–9": runs of consecutive numbers.
    std::string runs;
    for (std::size_t k = 0; k < missing.size();) {
        std::size_t j = k;
        while (j + 1 < missing.size() && missing[j + 1] == missing[j] + 1) ++j;
        runs += (runs.empty() ? "" : ", ") + std::to_string(missing[k]) +
                (j > k ? "–" + std::to_string(missing[j]) : std::string());
        k = j + 1;
    }
    a.warnings.push_back("partial: " + std::to_string(missing.size()) + " of " + std::to_string(a.mainLayers) +
                         " layers have no tensors on disk (layer" + (missing.size() == 1 ? " " : "s ") + runs +
                         "); nothing is sized for them");
    a.layersWithoutTensors = std::move(missing);
}

// The schedule (layer_types or the family's own keys, compress_ratios, mlp_layer_types) against what the
// tensors show, layer by layer; disagreements come once per kind, over their layers.
void scheduleAgainstTensors(const ModelConfig &cfg, const std::vector<unsigned> &seen, CheckpointAnalysis &a)
{
    a.scheduleSource = cfg.layerTypesFrom;
    const int L = a.mainLayers;
    const std::string from = cfg.layerTypesFrom.empty() ? "layer_types" : cfg.layerTypesFrom;
    std::map<std::string, std::vector<int>> byKind;
    const bool typed = static_cast<int>(cfg.layerTypes.size()) == L;
    for (int i = 0; i < L; ++i) {
        const auto u = static_cast<std::size_t>(i);
        const unsigned m = seen[u];
        LayerInfo &layer = a.layers[u];
        if (typed) {
            const std::string &kind = cfg.layerTypes[u];
            if (isRecurrentWord(kind) && !(m & kLinearMixer) && (m & kAttention))
                byKind[from + " says " + kind + ", but the attention tensors are not a recurrent mixer (no A_log, "
                                            "dt_bias or conv1d)"]
                    .push_back(i);
            else if (!isRecurrentWord(kind) && kind != "none" && (m & kLinearMixer))
                byKind["recurrent-mixer tensors (A_log, dt_bias, conv1d) are on disk, but " + from + " says " + kind]
                    .push_back(i);
        }
        if (u < cfg.compressRatios.size()) {
            layer.compressRatio = cfg.compressRatios[u];
            // DeepSeek-V4.1 (CSA2): only the kv_source_layer_ids layers compress; the others read their rows.
            const bool readsSource =
                !cfg.kvSourceLayers.empty() &&
                static_cast<std::int64_t>(i) > *std::min_element(cfg.kvSourceLayers.begin(), cfg.kvSourceLayers.end()) &&
                std::find(cfg.kvSourceLayers.begin(), cfg.kvSourceLayers.end(), static_cast<std::int64_t>(i)) ==
                    cfg.kvSourceLayers.end();
            if (layer.compressRatio > 0 && !(m & kCompressor) && (m & kAttention) && !readsSource)
                byKind["the config compresses " + std::to_string(layer.compressRatio) +
                       " tokens per row, but no attn.compressor.* tensors are on disk"]
                    .push_back(i);
            else if (layer.compressRatio == 0 && (m & kCompressor))
                byKind["window only (compress ratio 0), but attn.compressor.* tensors are on disk"].push_back(i);
        }
        const bool hashDeclared = u < cfg.mlpLayerTypes.size() && cfg.mlpLayerTypes[u] == "hash_moe";
        layer.hashRouted = hashDeclared || (m & kHashTable);
        if (hashDeclared && !(m & kHashTable) && layer.kind == LayerKind::Moe)
            byKind["hash-routed (hash_moe), but no gate.tid2eid table is on disk"].push_back(i);
        else if (!hashDeclared && (m & kHashTable) && u < cfg.mlpLayerTypes.size())
            byKind["a gate.tid2eid table is on disk, but mlp_layer_types routes the layer by scores"].push_back(i);
    }
    a.scheduleMismatches = describeRuns(byKind);
    for (const auto &m : a.scheduleMismatches)
        a.warnings.push_back("layer schedule: " + m);
}

} // namespace

std::optional<Category> CheckpointAnalysis::outsideLayers(std::string_view name) const
{
    return outsideLayersGiven(name, outsideLayersRole(name));
}

std::optional<Category> CheckpointAnalysis::outsideLayersGiven(std::string_view name, std::optional<Category> role) const
{
    if (role) return role;
    for (const auto &p : towerPrefixes)
        if (name.starts_with(p)) return Category::Encoders;
    return std::nullopt;
}

int CheckpointAnalysis::layerOf(std::string_view name) const
{
    if (const auto outside = outsideLayers(name)) {
        const auto block = outside == Category::Mtp ? mtpBlockPlace(name) : std::nullopt;
        return block && block->layer < kMaxConfigMtpLayers && mainLayers + block->layer < layerCount
                   ? mainLayers + block->layer
                   : -1;
    }
    const int layer = placeOf(name).layer;
    return layer < layerCount ? layer : -1;
}

CheckpointAnalysis analyze(const Checkpoint &ckpt, const std::atomic<bool> *cancel)
{
    CheckpointAnalysis a;
    const ModelConfig &cfg = ckpt.config;

    // The packed formats' tables (every block scale by module) are built on another core while this one
    // finds the towers and the layers: neither reads what the other makes.
    auto unpacking = std::async(std::launch::async, [&ckpt] { return Unpacker(ckpt); });
    const std::vector<std::optional<Category>> outsideRoles = outsideRolesOf(ckpt);
    a.towerPrefixes = findTowerPrefixes(ckpt, outsideRoles);
    // Every name is held against every tower: a header naming thousands of them is not a model's (a few
    // towers at most) and is told in one line rather than obeyed.
    if (constexpr std::size_t kMaxTowers = 64; a.towerPrefixes.size() > kMaxTowers) {
        a.warnings.push_back(std::to_string(a.towerPrefixes.size()) +
                             " prefixes hold numbered blocks of their own beside the decoder's layers (e.g. " +
                             printableLine(a.towerPrefixes.front().substr(0, 120)) + "*), more than " +
                             std::to_string(kMaxTowers) + " towers any model has; none is taken for an encoder");
        a.towerPrefixes.clear();
    }
    for (const auto &p : a.towerPrefixes)
        a.warnings.push_back(p + "* holds numbered blocks of its own beside the decoder's layers: counted as an "
                                 "encoder tower (in the total, not active per text token)");
    std::string mtpNote;
    std::vector<NamePlace> places;
    a.layerCount = countLayers(ckpt, a, outsideRoles, a.mainLayers, places, &mtpNote);
    if (!mtpNote.empty()) a.warnings.push_back(mtpNote);
    a.layers.resize(static_cast<std::size_t>(a.layerCount));
    for (int i = 0; i < a.layerCount; ++i) {
        a.layers[static_cast<std::size_t>(i)].index = i;
        a.layers[static_cast<std::size_t>(i)].kind = i >= a.mainLayers ? LayerKind::Mtp : LayerKind::Dense;
    }
    const int layerCount = a.layerCount;
    const auto layerSlots = static_cast<std::size_t>(layerCount);
    Unpacker unpacker = unpacking.get();
    std::array<std::map<std::string, Tally>, kCategoryCount> quant;
    std::array<std::map<std::string, std::uint64_t>, kCategoryCount> scaleDtypes;
    ParameterBudget &b = a.budget;

    // Layers the config schedules as linear attention (layer_types or the family's schedule).
    std::vector<char> linearLayer(layerSlots, 0);
    for (std::size_t i = 0; i < cfg.layerTypes.size() && i < linearLayer.size(); ++i)
        linearLayer[i] = isRecurrentWord(cfg.layerTypes[i]);

    // Every tensor once, in two halves of the shards on two cores when there are many (overShardHalves): each
    // half counts into a TensorPass of its own, and the two are joined in shard order after, so that the result
    // is what one pass gives (sums and flags add up; lists are the first half's, then the later's; the
    // dimensions read from shapes are replayed in order, as the later ones may depend on earlier ones).
    constexpr std::size_t kDtypes = kDtypeCount;
    struct DtypeTallies
    {
        std::array<Tally, kDtypes> quant{};
        std::array<std::uint64_t, kDtypes> scale{};
        std::array<char, kDtypes> quantSeen{}, scaleSeen{};
    };
    // A dimension the cache math can fall back on when config.json is silent, as a tensor shows it.
    struct DiskDimension
    {
        enum Kind { KvLoraRank, KvAProj, KvWidth, IndexHeadDim } kind;
        std::int64_t value;
    };
    struct TensorPass
    {
        TensorPass(const std::vector<LayerInfo> &start, Unpacker u)
            : layers(start), experts(start.size()), fused(start.size(), 0), seenOnDisk(start.size(), 0),
              unpacker(std::move(u))
        {
        }
        std::vector<LayerInfo> layers;
        // Expert numbers met per layer (a tensor's neighbours are mostly the same expert's), counted once at the end.
        std::vector<std::vector<int>> experts;
        std::vector<int> fused;
        // What the tensors of each layer show, to hold the schedule against (scheduleAgainstTensors).
        std::vector<unsigned> seenOnDisk;
        NameMap<std::pair<LayerRole, unsigned>> roleOfRest; // views into the names
        std::uint64_t strayTensors = 0;
        std::string strayExample;
        std::uint64_t hostTableBytes = 0;
        ParameterBudget budget;
        std::set<std::string, std::less<>> tableTensors;
        std::array<Tally, kCategoryCount> quantScales{};
        // Per category and dtype in arrays while the tensors are walked (no string key per tensor).
        std::array<DtypeTallies, kCategoryCount> tallies{};
        std::array<std::uint64_t, kDtypes> byDtype{};
        std::array<char, kDtypes> byDtypeSeen{};
        std::array<std::map<std::string, std::uint64_t>, kCategoryCount> formats; // category -> format -> elements
        std::vector<CheckpointAnalysis::PackedCount> packed;
        std::vector<HostTable> hostTables;
        std::vector<DiskDimension> disk;
        Unpacker unpacker;
    };
    const auto count = [&](TensorPass &p, std::size_t firstShard, std::size_t endShard, std::size_t seen) {
        // Packed tensors are most of a quantized checkpoint's (Kimi-K3's INT4 experts): room for every tensor of
        // the half, touched only as far as they are counted, never copied as the list grows (the first half's
        // room is for all of them: the later half's are joined onto it).
        std::size_t tensors = 0;
        for (std::size_t sh = firstShard; sh < endShard; ++sh)
            tensors += ckpt.shards[sh].tensors.size();
        p.packed.reserve(firstShard == 0 ? ckpt.tensorCount() : tensors);
        PopulateAhead packedAhead(p.packed.data(), tensors * sizeof(CheckpointAnalysis::PackedCount));
        // The last format counted, and its tally: most tensors have the format of the one before them.
        std::size_t lastFormatCategory = kCategoryCount;
        std::uint64_t *lastFormatTally = nullptr;
        std::string lastFormat;
        ParameterBudget &pb = p.budget;
        for (std::size_t sh = firstShard; sh < endShard; ++sh) {
            const ShardHeader &s = ckpt.shards[sh];
            const TensorInfo *const shardEnd = s.tensors.data() + s.tensors.size();
            for (const auto &t : s.tensors) {
                const TensorInfo *const next = &t + 1 < shardEnd ? &t + 1 : nullptr;
                const std::optional<Category> knownRole = outsideRoles[seen];
                if ((++seen & 4095) == 0) stopIfCancelled(cancel);
                // Encoder towers and mtp.* blocks have layer numbers of their own: never decoder layers.
                const std::optional<Category> outside = a.outsideLayersGiven(t.name, knownRole);
                const NamePlace &found = places[seen - 1];
                TensorPlace place = found.layer >= 0 ? TensorPlace{found.layer, std::string_view(t.name).substr(found.rest)}
                                                     : TensorPlace{-1, t.name};
                if (outside == Category::Mtp)
                    if (const auto block = mtpBlockPlace(t.name);
                        block && block->layer < kMaxConfigMtpLayers && a.mainLayers + block->layer < layerCount)
                        place = {a.mainLayers + block->layer, block->rest};
                if (place.layer >= layerCount) {
                    // A layer number the model does not have is never an index: the tensor stays visible
                    // under other, and a warning names it.
                    if (p.strayTensors++ == 0) p.strayExample = t.name;
                    place = {-1, t.name};
                }
                LayerInfo *layer = place.layer >= 0 ? &p.layers[static_cast<std::size_t>(place.layer)] : nullptr;
                const bool mtp = layer && layer->kind == LayerKind::Mtp;
                const std::string_view rest = place.rest;
                // The role is read once: it gives the category (as categorize() would) and the layer's facts.
                // Asked once per distinct rest ("mlp.experts.17.w1.weight" recurs in every layer): Kimi-K3's 497k
                // names hold a few thousand rests, each otherwise held against every row of the role table.
                LayerRole role;
                if (layer) {
                    bool fresh = false;
                    auto &known = p.roleOfRest.tryEmplace(rest, fresh);
                    if (fresh) {
                        const LayerRole r = layerRole(rest);
                        known = {r, diskMarks(rest, r.category)};
                    }
                    role = known.first;
                    p.seenOnDisk[static_cast<std::size_t>(place.layer)] |= known.second;
                }
                // A layer the schedule declares linear (KDA in GLM-5.3-Flash and Kimi-Linear keeps its
                // projections under self_attn.*): its attention tensors are linear attention.
                if (role.category == Category::Attention && place.layer < static_cast<int>(linearLayer.size()) &&
                    linearLayer[static_cast<std::size_t>(place.layer)])
                    role.category = Category::LinearAttention;
                const Category cat = outside ? *outside
                                     : !layer ? outsideRole(t.name)
                                     : mtp    ? Category::Mtp
                                              : role.category;
                const auto ci = static_cast<std::size_t>(cat);
                const auto di = static_cast<std::size_t>(t.dtype);

                if (layer) {
                    if (role.category == Category::Indexer) layer->indexerWeights = true;
                    if (role.category == Category::LinearAttention) layer->attention = "linear_attention";
                    else if (role.category == Category::Attention && layer->attention.empty())
                        layer->attention = "attention";
                    if (!mtp && (role.category == Category::RoutedExperts || role.category == Category::Router))
                        layer->kind = LayerKind::Moe;
                    if (auto &met = p.experts[static_cast<std::size_t>(place.layer)];
                        role.expert >= 0 && (met.empty() || met.back() != role.expert))
                        met.push_back(role.expert);
                    if (role.fusedExperts && t.shape.size() >= 2 &&
                        t.shape[0] <= std::uint64_t(kMaxConfigExperts))
                        p.fused[static_cast<std::size_t>(place.layer)] =
                            std::max(p.fused[static_cast<std::size_t>(place.layer)], static_cast<int>(t.shape[0]));
                }
                if (cat == Category::HostTables) p.hostTableBytes += t.bytes();
                if (cat == Category::RouterTables) {
                    pb.routerTables.add(t);
                    p.tableTensors.insert(std::string(t.name));
                    if (layer) layer->tables.add(t);
                    continue;
                }
                if (isQuantScale(t.name, t.dtype)) {
                    pb.quantScales.add(t);
                    p.quantScales[ci].add(t);
                    p.tallies[ci].scale[di] += t.numel;
                    p.tallies[ci].scaleSeen[di] = 1;
                    if (layer) layer->scales.add(t);
                    continue;
                }
                std::uint64_t elements = t.numel;
                if (const auto packed = p.unpacker.logical(t, next)) {
                    elements = *packed;
                    if (t.end > t.begin) {
                        packedAhead.need((p.packed.size() + 1) * sizeof(CheckpointAnalysis::PackedCount));
                        p.packed.push_back({t.shard, t.begin, elements});
                    }
                }
                pb.total += elements;
                pb.byCategory[ci] += elements;
                p.byDtype[di] += elements;
                p.byDtypeSeen[di] = 1;
                p.tallies[ci].quant[di].add(t, elements);
                p.tallies[ci].quantSeen[di] = 1;
                if (const std::string &format = p.unpacker.formatOf(t, next); ci == lastFormatCategory && format == lastFormat) {
                    *lastFormatTally += elements;
                } else {
                    lastFormatTally = &p.formats[ci][format];
                    *lastFormatTally += elements;
                    lastFormatCategory = ci;
                    lastFormat = format;
                }
                if (layer) layer->params.add(t, elements);
                if (cat == Category::Other) pb.otherTensors.push_back(std::string(t.name));
                if (cat == Category::HostTables && !t.shape.empty() && t.shape[0] > 0)
                    p.hostTables.push_back({std::string(t.name), place.layer, t.shape[0], elements / t.shape[0]});

                // Dimensions the cache math can fall back on when config.json is silent, replayed in order after.
                // (GGUF: attn_kv_a_norm, attn_kv_a_mqa, indexer.attn_k; row-major shapes as the reader gives them.)
                if (!mtp && t.shape.size() == 1 &&
                    (endsWith(rest, "self_attn.kv_a_layernorm.weight") || rest == "attn_kv_a_norm.weight"))
                    p.disk.push_back({DiskDimension::KvLoraRank, static_cast<std::int64_t>(t.shape[0])});
                if (!mtp && t.shape.size() == 2 &&
                    (endsWith(rest, "self_attn.kv_a_proj_with_mqa.weight") || rest == "attn_kv_a_mqa.weight"))
                    p.disk.push_back({DiskDimension::KvAProj, static_cast<std::int64_t>(t.shape[0])});
                if (!mtp && t.shape.size() == 2 && endsWith(rest, "self_attn.k_proj.weight") &&
                    !isQuantScale(t.name, t.dtype))
                    p.disk.push_back({DiskDimension::KvWidth, static_cast<std::int64_t>(t.shape[0])});
                if (t.shape.size() == 2 && (endsWith(rest, "self_attn.indexer.wk.weight") || rest == "indexer.attn_k.weight"))
                    p.disk.push_back({DiskDimension::IndexHeadDim, static_cast<std::int64_t>(t.shape[0])});
            }
        }
    };
    // The later half's pass is made only when the shards are split: its unpacker is a copy (each pass keeps
    // its own words and counts).
    std::optional<TensorPass> passes[2];
    passes[0].emplace(a.layers, std::move(unpacker));
    overShardHalves(
        ckpt,
        [&](std::size_t firstShard, std::size_t endShard, std::size_t firstTensor) {
            count(*passes[firstShard == 0 ? 0 : 1], firstShard, endShard, firstTensor);
        },
        [&] { passes[1].emplace(a.layers, passes[0]->unpacker); });

    // The two passes joined, the first's first.
    std::vector<std::vector<int>> experts(layerSlots);
    std::vector<int> fused(layerSlots, 0);
    std::vector<unsigned> seenOnDisk(layerSlots, 0);
    std::uint64_t strayTensors = 0;
    std::string strayExample;
    std::array<Tally, kCategoryCount> quantScales{};
    std::array<DtypeTallies, kCategoryCount> tallies{};
    std::array<std::uint64_t, kDtypes> byDtype{};
    std::array<char, kDtypes> byDtypeSeen{};
    std::array<std::map<std::string, std::uint64_t>, kCategoryCount> formats;
    std::uint64_t unknownPacked = 0;
    std::string unknownExample;
    for (auto &pass : passes) {
        if (!pass) continue;
        TensorPass &p = *pass;
        for (std::size_t i = 0; i < layerSlots; ++i) {
            LayerInfo &into = a.layers[i];
            const LayerInfo &from = p.layers[i];
            into.params.add(from.params);
            into.scales.add(from.scales);
            into.tables.add(from.tables);
            into.indexerWeights = into.indexerWeights || from.indexerWeights;
            // Linear attention wins over attention, as it does within one pass.
            if (from.attention == "linear_attention" || (into.attention.empty() && !from.attention.empty()))
                into.attention = from.attention;
            if (from.kind == LayerKind::Moe) into.kind = LayerKind::Moe;
            experts[i].insert(experts[i].end(), p.experts[i].begin(), p.experts[i].end());
            fused[i] = std::max(fused[i], p.fused[i]);
            seenOnDisk[i] |= p.seenOnDisk[i];
        }
        if (p.strayTensors && strayTensors == 0) strayExample = p.strayExample;
        strayTensors += p.strayTensors;
        a.hostTableBytes += p.hostTableBytes;
        b.total += p.budget.total;
        for (std::size_t c = 0; c < kCategoryCount; ++c)
            b.byCategory[c] += p.budget.byCategory[c];
        b.quantScales.add(p.budget.quantScales);
        b.routerTables.add(p.budget.routerTables);
        b.otherTensors.insert(b.otherTensors.end(), std::make_move_iterator(p.budget.otherTensors.begin()),
                              std::make_move_iterator(p.budget.otherTensors.end()));
        a.tableTensors.merge(p.tableTensors);
        for (std::size_t c = 0; c < kCategoryCount; ++c) {
            quantScales[c].add(p.quantScales[c]);
            for (std::size_t d = 0; d < kDtypes; ++d) {
                tallies[c].quant[d].add(p.tallies[c].quant[d]);
                tallies[c].scale[d] += p.tallies[c].scale[d];
                tallies[c].quantSeen[d] = tallies[c].quantSeen[d] || p.tallies[c].quantSeen[d];
                tallies[c].scaleSeen[d] = tallies[c].scaleSeen[d] || p.tallies[c].scaleSeen[d];
            }
            for (const auto &[f, n] : p.formats[c])
                formats[c][f] += n;
        }
        for (std::size_t d = 0; d < kDtypes; ++d) {
            byDtype[d] += p.byDtype[d];
            byDtypeSeen[d] = byDtypeSeen[d] || p.byDtypeSeen[d];
        }
        if (&pass == &passes[0]) {
            a.packedElements = std::move(p.packed);
        } else {
            populateForWrite(a.packedElements.data() + a.packedElements.size(),
                             p.packed.size() * sizeof(CheckpointAnalysis::PackedCount));
            a.packedElements.insert(a.packedElements.end(), p.packed.begin(), p.packed.end());
        }
        a.hostTables.insert(a.hostTables.end(), std::make_move_iterator(p.hostTables.begin()),
                            std::make_move_iterator(p.hostTables.end()));
        for (const DiskDimension &d : p.disk)
            switch (d.kind) {
            case DiskDimension::KvLoraRank: a.diskKvLoraRank = d.value; break;
            case DiskDimension::KvAProj:
                if (a.diskKvLoraRank) a.diskRopeDim = d.value - *a.diskKvLoraRank;
                break;
            case DiskDimension::KvWidth:
                if (!a.diskKvWidth) a.diskKvWidth = d.value;
                break;
            case DiskDimension::IndexHeadDim: a.diskIndexHeadDim = d.value; break;
            }
        if (p.unpacker.unknown() && unknownPacked == 0) unknownExample = p.unpacker.unknownExample();
        unknownPacked += p.unpacker.unknown();
    }
    // Met in shard order and, within a shard, in data order (as parsed); a checkpoint built by hand may not be.
    const auto byPlace = [](const CheckpointAnalysis::PackedCount &x, const CheckpointAnalysis::PackedCount &y) {
        return x.shard != y.shard ? x.shard < y.shard : x.begin < y.begin;
    };
    if (!std::is_sorted(a.packedElements.begin(), a.packedElements.end(), byPlace))
        std::sort(a.packedElements.begin(), a.packedElements.end(), byPlace);
    std::sort(b.otherTensors.begin(), b.otherTensors.end());
    if (!b.otherTensors.empty())
        a.warnings.push_back(std::to_string(b.otherTensors.size()) + " tensor" +
                             (b.otherTensors.size() == 1 ? " is" : "s are") + " of no known role (e.g. " +
                             b.otherTensors.front() + "); counted under other, in the total and as active");
    if (strayTensors)
        a.warnings.push_back(std::to_string(strayTensors) + " tensor" + (strayTensors == 1 ? "" : "s") +
                             " name a layer beyond the model's " + std::to_string(layerCount) +
                             " layers (e.g. " + strayExample + "); counted under other");

    for (const auto &r : passes[0]->unpacker.refusals())
        a.warnings.push_back(r);
    if (unknownPacked)
        a.warnings.push_back(std::to_string(unknownPacked) + " packed weights (e.g. " + unknownExample +
                             ") match no quantization_config group with num_bits; counted as stored");
    for (std::size_t i = 0; i < a.layers.size(); ++i) {
        auto &met = experts[i];
        std::sort(met.begin(), met.end());
        const auto distinct = std::unique(met.begin(), met.end()) - met.begin();
        a.layers[i].routedExperts = std::max(static_cast<int>(distinct), fused[i]);
        if (a.layers[i].kind == LayerKind::Moe && !a.diskRoutedExperts && a.layers[i].routedExperts > 0)
            a.diskRoutedExperts = a.layers[i].routedExperts;
    }

    // The tallies by dtype, named (the maps hold only the dtypes met).
    for (std::size_t d = 0; d < kDtypes; ++d) {
        const std::string name(dtypeName(static_cast<Dtype>(d)));
        if (byDtypeSeen[d]) b.byDtype[name] += byDtype[d];
        for (std::size_t c = 0; c < kCategoryCount; ++c) {
            if (tallies[c].quantSeen[d]) quant[c][name] = tallies[c].quant[d];
            if (tallies[c].scaleSeen[d]) scaleDtypes[c][name] = tallies[c].scale[d];
        }
    }
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
        if (quant[c].empty() && quantScales[c].tensors == 0) continue;
        // The formats by the elements they hold, largest first: "FP8 e4m3 128x128 + BF16".
        std::vector<std::pair<std::uint64_t, std::string>> byElements;
        for (const auto &[f, n] : formats[c])
            byElements.push_back({n, f});
        std::sort(byElements.begin(), byElements.end(), [](const auto &x, const auto &y) {
            return x.first != y.first ? x.first > y.first : x.second < y.second;
        });
        std::string format;
        for (const auto &[n, f] : byElements)
            format += (format.empty() ? "" : " + ") + f;
        a.quantLayout.push_back({static_cast<Category>(c), quant[c], quantScales[c], scaleDtypes[c], format});
    }

    // The routed experts' declared format against what their tensors are (expert_dtype, hf_quant_config.json).
    if (const auto &q = cfg.quantization; !q.expertFormat.empty()) {
        const auto row = std::find_if(a.quantLayout.begin(), a.quantLayout.end(),
                                      [](const QuantRow &r) { return r.category == Category::RoutedExperts; });
        std::string declared = q.expertFormat;
        for (auto &ch : declared) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        auto bitsOf = [](const std::string &f) -> int { // the width a format name says, 0 for none
            for (int b : {4, 8})
                for (const std::string &w : {"FP" + std::to_string(b), "INT" + std::to_string(b), std::to_string(b) + "-BIT"})
                    if (f.find(w) != std::string::npos) return b;
            return 0;
        };
        std::string onDisk = row != a.quantLayout.end() ? row->format.substr(0, row->format.find(" + ")) : "";
        std::string upper = onDisk;
        for (auto &ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        if (row != a.quantLayout.end() && bitsOf(declared) && bitsOf(declared) != bitsOf(upper))
            a.warnings.push_back(q.expertFormatFrom + " declares the routed experts " + q.expertFormat +
                                 ", but their tensors are " + onDisk + "; counted as the tensors show");
    }

    // Active per token: the main model except routed experts, plus their top-k share.
    const std::optional<std::int64_t> experts_ =
        cfg.nRoutedExperts ? cfg.nRoutedExperts : a.diskRoutedExperts;
    const std::uint64_t routed = b.byCategory[static_cast<std::size_t>(Category::RoutedExperts)];
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
        const auto cat = static_cast<Category>(c);
        // Routed experts by their share below; MTP and encoders do not run for a text token; of a host
        // table only the rows a token reads (below).
        if (cat != Category::RoutedExperts && cat != Category::Mtp && cat != Category::Encoders &&
            cat != Category::HostTables)
            b.activeByCategory[c] = b.byCategory[c];
    }
    const std::string hostNote = activeHostRows(cfg, a);
    if (routed == 0) {
        std::uint64_t active = 0;
        for (auto v : b.activeByCategory)
            active += v;
        b.activatedPerToken = active;
        b.activationNote = "no routed experts: every main-model parameter is active" + hostNote;
    } else if (cfg.numExpertsPerTok && experts_ && *experts_ > 0) {
        const auto k = static_cast<unsigned __int128>(*cfg.numExpertsPerTok);
        const auto e = static_cast<unsigned __int128>(*experts_);
        const auto share =
            static_cast<std::uint64_t>((static_cast<unsigned __int128>(routed) * k + e / 2) / e);
        b.activeByCategory[static_cast<std::size_t>(Category::RoutedExperts)] = share;
        std::uint64_t active = 0;
        for (auto v : b.activeByCategory)
            active += v;
        b.activatedPerToken = active;
        b.activationNote = "main model (MTP excluded), routed experts x " +
                           std::to_string(*cfg.numExpertsPerTok) + "/" + std::to_string(*experts_);
        if ((static_cast<unsigned __int128>(routed) * k) % e != 0)
            b.activationNote += " (rounded to the nearest parameter)";
        b.activationNote += hostNote;
    } else {
        b.activationNote = "num_experts_per_tok is missing from config.json";
    }

    // The attention kind of each layer: the schedule's word where config.json gives one (full, sliding,
    // linear, sparse, DeepSeek-V4's compressed kinds), else what the tensors show.
    for (std::size_t i = 0; i < cfg.layerTypes.size() && i < static_cast<std::size_t>(a.mainLayers); ++i)
        a.layers[i].attention = cfg.layerTypes[i];
    for (auto &l : a.layers)
        if (l.attention.empty()) l.attention = "none";
    layerKindsFromConfig(cfg, a);
    scheduleAgainstTensors(cfg, seenOnDisk, a);
    decideMixers(cfg, seenOnDisk, a);
    buildIndexShare(ckpt, a);
    markLayersWithoutTensors(a);
    if (!ckpt.hasConfig)
        a.warnings.push_back("no config.json: layers and budget come from tensor names alone");
    for (const auto &w : cfg.warnings)
        a.warnings.push_back("config.json: " + w);
    return a;
}

} // namespace atlas
