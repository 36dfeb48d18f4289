#include "anatomy.h"

#include "gguf_names.h"

#include "c_locale.h"
#include "roles.h"

#include "report.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

namespace atlas {

namespace {

std::string_view lastSegment(std::string_view s)
{
    const auto dot = s.rfind('.');
    return dot == std::string_view::npos ? s : s.substr(dot + 1);
}

// A module: the tensors sharing a name up to their last dot ("self_attn.q_a_proj" holds .weight and
// .weight_scale_inv); fused experts keep their parameter names apart ("mlp.experts.down_proj_blocks").
struct Module
{
    std::vector<const TensorInfo *> tensors;
    // Views into the module's name (the key of LayerTensors' map, which stays put): its last segment, its
    // first, and all but its last ("self_attn.indexer" of "self_attn.indexer.wk").
    std::string_view last, first, parent;
};

// The name inside its layer; an MTP block named apart (mtp.0.attn.wkv) as well as layers.N.
std::string_view layerRest(std::string_view name)
{
    if (const auto block = mtpBlockPlace(name)) return block->rest;
    return placeOf(name).rest;
}

// The cache's element type in the words of whoever allocates it: "bf16", "fp8", llama.cpp's "f16" / "q8_0".
std::string cacheTypeWords(const CacheBudget &c)
{
    return c.preset == CachePreset::LlamaCpp ? llamaCacheTypeName(c.llamaCacheTypeK) + " K, V a view of it"
                                             : std::string(kvDtypeName(c.kvDtype));
}

// A layer's tensors by module. Built each time a layer is drawn (on the GUI thread when a layer is clicked),
// so it holds pointers and views into the checkpoint, not copies of names: a GLM-5 MoE layer has 1,500 tensors.
class LayerTensors
{
public:
    // `index`: the layer's tensors when known (else every tensor is looked at).
    LayerTensors(const LoadedCheckpoint &data, int layer, const TensorsByLayer *index) : m_a(data.analysis)
    {
        if (index && static_cast<std::size_t>(layer) < index->size()) {
            const auto &tensors = (*index)[static_cast<std::size_t>(layer)];
            m_all.reserve(tensors.size());
            m_placed.reserve(tensors.size());
            for (const TensorInfo *t : tensors)
                add(*t);
            return;
        }
        for (const auto &shard : data.checkpoint.shards)
            for (const auto &t : shard.tensors)
                if (m_a.layerOf(t.name) == layer) add(t);
    }

    void add(const TensorInfo &t)
    {
        std::string_view rest = layerRest(t.name);
        if (m_prefix.empty()) m_prefix = t.name.substr(0, t.name.size() - rest.size());
        // A GGUF tensor takes its safetensors original's module (gguf_names.h), so that the diagram reads
        // a quantised copy as it reads the checkpoint: blk.3.attn_kv_a_mqa is self_attn.kv_a_proj_with_mqa,
        // the stacked blk.3.ffn_gate_exps the fused mlp.experts.gate_proj, attn_k_b and attn_v_b kv_b_proj.
        std::string original;
        if (t.name.starts_with("blk."))
            if (const auto st = safetensorsNameOf(t.name)) {
                original = std::string(placeOf(*st).rest);
                if (const auto star = original.find("experts.*."); star != std::string::npos) original.erase(star + 8, 2);
                rest = original;
            }
        auto dot = rest.rfind('.');
        // Parameters that are modules of their own: attention sinks, Mamba's A_log / D / dt_bias.
        for (std::string_view own :
             {".sinks", ".A_log", ".D", ".dt_bias", ".attn_sink", ".learnable_sink_param", ".index_kpool_compress_gate",
              ".index_kpool_compress_ape"})
            if (rest.ends_with(own)) dot = std::string_view::npos;
        std::string_view module = dot == std::string_view::npos ? rest : rest.substr(0, dot);
        std::string fused;
        if (module.ends_with(".experts") && dot != std::string_view::npos) {
            // Fused experts: "mlp.experts.gate_up_proj_blocks" -> "mlp.experts.gate_up_proj".
            std::string_view p = rest.substr(dot + 1);
            for (std::string_view suffix : {"_blocks", "_scales", "_bias"})
                if (p.ends_with(suffix)) p.remove_suffix(suffix.size());
            fused.reserve(module.size() + 1 + p.size());
            fused.append(module).append(1, '.').append(p);
            module = fused;
        }
        // A module's tensors come one after another (weight, then its scale): the last one is tried first.
        if (!m_last || m_last->first != module) {
            auto it = m_modules.find(module);
            if (it == m_modules.end()) {
                it = m_modules.emplace(std::string(module), Module{}).first;
                const std::string_view key = it->first;
                it->second.last = lastSegment(key);
                it->second.first = key.substr(0, key.find('.'));
                it->second.parent = key.substr(0, key.rfind('.'));
            }
            m_last = &*it;
        }
        m_last->second.tensors.push_back(&t);
        m_all.push_back(&t);
    }

    const std::string &prefix() const { return m_prefix; }
    bool empty() const { return m_modules.empty(); }

    // The module whose name ends with `.short` (or is `short`) inside a module whose first segment is
    // one of `parents`; null when there is none.
    const Module *find(std::string_view shortName, std::initializer_list<std::string_view> parents) const
    {
        for (const auto &[name, m] : m_modules) {
            if (m.last != shortName) continue;
            if (parents.size() == 0 || std::find(parents.begin(), parents.end(), m.first) != parents.end() ||
                std::find(parents.begin(), parents.end(), m.parent) != parents.end())
                return &m;
        }
        return nullptr;
    }
    // The module of exactly this name ("attn.wkv", not "attn.compressor.wkv").
    const Module *exact(std::string_view name) const
    {
        auto it = m_modules.find(name);
        return it == m_modules.end() ? nullptr : &it->second;
    }
    // Every module whose name starts with `prefix`.
    std::vector<const Module *> under(std::string_view prefix) const
    {
        std::vector<const Module *> out;
        for (auto it = m_modules.lower_bound(prefix); it != m_modules.end() && it->first.starts_with(prefix); ++it)
            out.push_back(&it->second);
        return out;
    }
    bool anyUnder(std::string_view segment) const
    {
        std::string inner;
        inner.reserve(segment.size() + 2);
        inner.append(1, '.').append(segment).append(1, '.');
        const std::string_view lead = std::string_view(inner).substr(1); // "segment."
        for (const auto &[name, m] : m_modules)
            if (name.starts_with(lead) || name.find(inner) != std::string::npos) return true;
        return false;
    }

    // Fills a box's tensors, parameters and dtypes from modules, and marks them placed.
    void fill(AnatomyBox &box, std::initializer_list<const Module *> modules)
    {
        fill(box, std::vector<const Module *>(modules));
    }
    void fill(AnatomyBox &box, const std::vector<const Module *> &modules)
    {
        // Per dtype: the weights' parameters, and whether scales, a token→expert table or hashing constants
        // are stored in it. Named in the end: weights by parameters (most first), the others by name.
        std::array<std::uint64_t, kDtypeCount> weights{};
        std::array<std::uint8_t, kDtypeCount> others{};
        enum : std::uint8_t { Scale = 1, Table = 2, Hash = 4 };
        box.dtypes.clear();
        // A tensor of no parameters is a quantisation scale, or hash routing's token→expert table.
        const auto note = [&](const TensorInfo &t, std::uint64_t p) {
            const auto d = static_cast<std::size_t>(t.dtype);
            if (p)
                weights[d] += p;
            else if (m_a.tableTensors.count(t.name))
                others[d] |= t.name.ends_with("tid2eid") ? Table : Hash;
            else
                others[d] |= Scale;
        };
        for (const std::string &name : box.tensors) // what an earlier call put in
            if (const TensorInfo *t = byName(name)) note(*t, m_a.parametersOf(*t));
        std::size_t count = box.tensors.size();
        for (const Module *m : modules)
            if (m) count += m->tensors.size();
        box.tensors.reserve(count);
        for (const Module *m : modules) {
            if (!m) continue;
            for (const TensorInfo *t : m->tensors) {
                box.tensors.emplace_back(t->name);
                m_placed.push_back(t);
                const std::uint64_t p = m_a.parametersOf(*t);
                box.parameters += p;
                note(*t, p);
            }
        }
        // Dtype names in the order a std::set of them would keep.
        const auto named = [&](std::uint8_t flag) {
            std::vector<std::string_view> out;
            for (std::size_t d = 0; d < kDtypeCount; ++d)
                if (others[d] & flag) out.push_back(dtypeName(static_cast<Dtype>(d)));
            std::sort(out.begin(), out.end());
            return out;
        };
        std::vector<std::pair<std::uint64_t, std::string_view>> order;
        for (std::size_t d = 0; d < kDtypeCount; ++d)
            if (weights[d]) order.push_back({weights[d], dtypeName(static_cast<Dtype>(d))});
        std::sort(order.rbegin(), order.rend());
        for (const auto &[n, d] : order)
            box.dtypes.append(box.dtypes.empty() ? "" : " + ").append(d);
        for (const std::string_view d : named(Scale))
            box.dtypes.append(" + ").append(d).append(" scales");
        for (const std::string_view d : named(Table))
            box.dtypes.append(" + ").append(d).append(" token→expert table");
        for (const std::string_view d : named(Hash))
            box.dtypes.append(box.dtypes.empty() ? "" : " + ").append(d).append(" hashing constants");
    }

    // A linear module's logical (in, out): from its weight's shape and logical parameters.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> inOut(const Module *m) const
    {
        if (!m) return std::nullopt;
        // GGUF's kv_b_proj, split per head (DeepseekV2Model.modify_tensors): attn_k_b [heads, kv_lora, nope] and
        // attn_v_b [heads, v, kv_lora]; together kv_lora in, heads x (nope + v) out.
        for (const TensorInfo *t : m->tensors)
            if (t->shape.size() == 3 && t->name.ends_with(".attn_k_b.weight") && t->shape[1] > 0) {
                std::uint64_t total = 0;
                for (const TensorInfo *u : m->tensors)
                    total += m_a.parametersOf(*u);
                return std::pair{t->shape[1], total / t->shape[1]};
            }
        for (const TensorInfo *t : m->tensors) {
            const std::uint64_t p = m_a.parametersOf(*t);
            if (!p || t->shape.size() < 2 || t->shape[0] == 0) continue;
            if (t->name.ends_with(".bias")) continue;
            if (t->name.ends_with(".qweight")) return std::pair{t->shape[0], p / t->shape[0]}; // AWQ: [in, out/8]
            return std::pair{p / t->shape[0], t->shape[0]};
        }
        return std::nullopt;
    }
    // A norm's (or bias's) width.
    std::optional<std::uint64_t> width(const Module *m) const
    {
        if (!m) return std::nullopt;
        for (const TensorInfo *t : m->tensors)
            if (t->shape.size() == 1) return t->shape[0];
        return std::nullopt;
    }

    // The names of the layer's tensors no box holds, sorted.
    std::vector<std::string> unplaced() const
    {
        std::vector<const TensorInfo *> placed = m_placed;
        std::sort(placed.begin(), placed.end());
        std::vector<std::string_view> names;
        for (const TensorInfo *t : m_all)
            if (!std::binary_search(placed.begin(), placed.end(), t) &&
                std::none_of(placed.begin(), placed.end(), [t](const TensorInfo *p) { return p->name == t->name; }))
                names.push_back(t->name);
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        return {names.begin(), names.end()};
    }

private:
    // The tensor of this name among the layer's (a box filled a second time names what it holds).
    const TensorInfo *byName(std::string_view name)
    {
        if (m_byName.size() != m_all.size()) {
            m_byName = m_all;
            std::sort(m_byName.begin(), m_byName.end(),
                      [](const TensorInfo *a, const TensorInfo *b) { return a->name < b->name; });
        }
        const auto it = std::lower_bound(m_byName.begin(), m_byName.end(), name,
                                         [](const TensorInfo *t, std::string_view n) { return t->name < n; });
        return it != m_byName.end() && (*it)->name == name ? *it : nullptr;
    }

    const CheckpointAnalysis &m_a;
    std::string m_prefix;
    std::map<std::string, Module, std::less<>> m_modules;
    std::pair<const std::string, Module> *m_last = nullptr;
    std::vector<const TensorInfo *> m_all, m_placed, m_byName;
};

AnatomyBox box(BoxKind kind, std::string title, std::string detail)
{
    AnatomyBox b;
    b.kind = kind;
    b.title = std::move(title);
    b.detail = std::move(detail);
    return b;
}

std::string arrow(std::uint64_t in, std::uint64_t out)
{
    return groupDigits(in) + " → " + groupDigits(out);
}

AnatomyBox linearBox(LayerTensors &lt, const Module *m, const std::string &title, BoxKind kind = BoxKind::Linear)
{
    AnatomyBox b;
    b.kind = kind;
    b.title = title;
    if (auto io = lt.inOut(m)) b.detail = arrow(io->first, io->second);
    lt.fill(b, {m});
    return b;
}

AnatomyBox normBox(LayerTensors &lt, const Module *m, const std::string &title)
{
    AnatomyBox b;
    b.kind = BoxKind::Norm;
    b.title = title;
    if (auto w = lt.width(m)) b.detail = groupDigits(*w);
    lt.fill(b, {m});
    return b;
}

const Module *attn(const LayerTensors &lt, std::string_view name)
{
    return lt.find(name, {"self_attn", "attention", "attn", "self_attention", "mixer"});
}

const Module *indexerPart(const LayerTensors &lt, std::string_view name)
{
    return lt.find(name, {"self_attn.indexer", "attention.indexer", "attn.indexer"});
}

// The stage a layer's attention is drawn as: its kind's row (decided once by the analysis).
LayerAttention attentionOf(const LayerInfo &info)
{
    const MixerKindRow &row = mixerKind(info.mixer);
    if (!row.recurrent && !info.attentionOnDisk) return LayerAttention::None; // nothing of it to draw
    return row.anatomy;
}

void mlaStage(const LoadedCheckpoint &data, LayerTensors &lt, const LayerInfo &info, LayerAnatomy &out, AnatomyMode mode)
{
    const ModelConfig &cfg = data.checkpoint.config;
    const CacheBudget &cache = data.cache;

    const Module *qa = attn(lt, "q_a_proj"), *qb = attn(lt, "q_b_proj"), *qDirect = attn(lt, "q_proj");
    const Module *kva = attn(lt, "kv_a_proj_with_mqa"), *kvb = attn(lt, "kv_b_proj"), *o = attn(lt, "o_proj");
    const auto kvLora = lt.width(attn(lt, "kv_a_layernorm"));
    const auto kvaIo = lt.inOut(kva);
    const auto qbIo = lt.inOut(qb ? qb : qDirect);
    const auto kvbIo = lt.inOut(kvb);
    // The rope part: what kv_a_proj_with_mqa adds to the latent (0: unknown).
    const std::uint64_t rope = kvaIo && kvLora && kvaIo->second > *kvLora ? kvaIo->second - *kvLora : 0;
    const bool headsFromConfig = true; // no tensor holds the head count by itself
    const std::uint64_t heads = static_cast<std::uint64_t>(cfg.numAttentionHeads.value_or(0));
    const bool perHead = qbIo && kvbIo && heads && qbIo->second % heads == 0 && kvbIo->second % heads == 0;
    const std::uint64_t qPer = perHead ? qbIo->second / heads : 0;
    const std::uint64_t nope = perHead && qPer > rope ? qPer - rope : 0;
    const std::uint64_t vDim = perHead && kvbIo->second / heads > nope ? kvbIo->second / heads - nope : 0;

    // 1. The latents, each a projection of the hidden state: the query latent, and the 576 values a
    //    token leaves in the cache, split 512 latent + 64 RoPE key shared by every head.
    AnatomyStage latents;
    latents.title = "MLA: the latents, projected from the hidden state";
    AnatomyColumn q;
    q.title = "query latent";
    if (qa) {
        q.boxes.push_back(linearBox(lt, qa, "q_a_proj"));
        q.boxes.back().detail += " (query latent)";
        q.boxes.push_back(normBox(lt, attn(lt, "q_a_layernorm"), "q_a_layernorm"));
    }
    // vLLM deepseek_v2.py (DeepseekV2MLAAttention.forward): kv_a_proj_with_mqa's output is split into
    // the latent and k_pe; kv_a_layernorm normalises the latent, rotary_emb rotates k_pe (with the
    // query's rope part), and only then is "normalised latent ‖ rotated k_pe" written to the cache.
    const bool noRotation = cfg.mlaUseNope; // Kimi-Linear: the rope-width values are cached, never rotated
    AnatomyColumn kv;
    kv.title = rope ? "KV latent (" + groupDigits(kvLora.value_or(0)) + ")" : "KV latent";
    kv.boxes.push_back(linearBox(lt, kva, "kv_a_proj_with_mqa"));
    if (kvLora && rope)
        kv.boxes.back().detail += ", split " + groupDigits(*kvLora) + " latent + " + groupDigits(rope) + " k_pe";
    kv.boxes.push_back(normBox(lt, attn(lt, "kv_a_layernorm"), "kv_a_layernorm"));
    kv.boxes.back().detail += (kv.boxes.back().detail.empty() ? "" : ", ") + std::string("on the latent part");
    AnatomyBox latent;
    latent.kind = BoxKind::Latent;
    latent.title = "normalised latent (cached)";
    if (kvLora && rope) {
        latent.detail = groupDigits(*kvLora) + " of the " + groupDigits(*kvLora + rope) + " values a token caches";
    } else if (kvLora && kvaIo && kvaIo->second == *kvLora) {
        latent.detail = groupDigits(*kvLora) + " latent per token, no RoPE key (qk_rope_head_dim 0)";
    }
    latent.cached = true;
    if (cache.available && cache.mla())
        latent.cacheNote = groupDigits(static_cast<std::uint64_t>(cache.kvBytesPerLayer)) + " B/token with k_pe (" +
                           cacheTypeWords(cache) + ")";
    kv.boxes.push_back(latent);
    if (!q.boxes.empty()) latents.columns.push_back(std::move(q));
    latents.columns.push_back(std::move(kv));
    if (rope) {
        AnatomyColumn r;
        r.title = noRotation ? "k_pe (" + groupDigits(rope) + ", no RoPE)" : "shared RoPE key (" + groupDigits(rope) + ")";
        r.boxes.push_back(box(BoxKind::Heads, "k_pe",
                              "the last " + groupDigits(rope) + " of kv_a_proj_with_mqa's " +
                                  groupDigits(kvLora.value_or(0) + rope) + ", one for all heads"));
        if (!noRotation) r.boxes.push_back(box(BoxKind::Heads, "rotary position (RoPE)", "rotated by the token's position"));
        AnatomyBox cached = box(BoxKind::Latent, noRotation ? "k_pe (cached as is)" : "rotated k_pe (cached)",
                                noRotation ? "mla_use_nope: never rotated" : "in the same row as the latent");
        cached.cached = true;
        cached.cacheNote = "with the latent, in the same row";
        r.boxes.push_back(cached);
        latents.columns.push_back(std::move(r));
    }
    out.stages.push_back(std::move(latents));

    // 2. The DSA indexer: which tokens each query reads. Three inputs fan into its scores: index queries
    //    from the query latent, index keys from the hidden state (cached), per-head weights from the
    //    hidden state. A shared layer (IndexShare) runs none of it and takes an earlier layer's top-k.
    if (info.indexer != IndexerRole::None || info.indexerWeights) {
        AnatomyStage ix;
        ix.title = info.indexerWeights ? "DSA indexer: which tokens each query reads"
                                       : "DSA indexer: skipped on this layer (IndexShare)";
        const std::uint64_t pool = static_cast<std::uint64_t>(cfg.indexKpool.value_or(1));
        const std::string keysCache =
            cache.available && cache.indexEntryBytes > 0
                ? groupDigits(static_cast<std::uint64_t>(cache.indexEntryBytes)) +
                      (pool > 1 ? " B per " + groupDigits(pool) + " tokens" : std::string(" B/token"))
                : std::string();
        AnatomyColumn iq, ik, iw;
        iq.title = "index queries";
        ik.title = "index keys";
        iw.title = "head weights";
        if (info.indexerWeights) {
            const Module *wqb = indexerPart(lt, "wq_b"), *wk = indexerPart(lt, "wk"),
                         *wp = indexerPart(lt, "weights_proj");
            iq.boxes.push_back(linearBox(lt, wqb, "wq_b", BoxKind::Indexer));
            iq.boxes.back().detail += " (from the query latent)";
            ik.boxes.push_back(linearBox(lt, wk, "wk", BoxKind::Indexer));
            ik.boxes.back().detail += " (from the hidden state)";
            ik.boxes.push_back(normBox(lt, indexerPart(lt, "k_norm"), "k_norm"));
            ik.boxes.back().kind = BoxKind::Indexer;
            iw.boxes.push_back(linearBox(lt, wp, "weights_proj", BoxKind::Indexer));
            iw.boxes.back().detail += " (from the hidden state)";
            const auto wkIo = lt.inOut(wk), wpIo = lt.inOut(wp), wqIo = lt.inOut(wqb);
            if (wqIo && wkIo && wkIo->second && wqIo->second % wkIo->second == 0)
                iq.boxes.push_back(box(BoxKind::Heads, "index query heads",
                                       groupDigits(wqIo->second / wkIo->second) + " heads × " + groupDigits(wkIo->second)));
            // GLM-5.3-Flash pools the keys: a gate and position terms fold index_kpool tokens into one.
            if (const Module *gatePool = indexerPart(lt, "index_kpool_compress_gate")) {
                AnatomyBox pb = box(BoxKind::Indexer, "key pooling",
                                    "index_kpool_compress_gate / _ape: " + groupDigits(pool) + " tokens → one key");
                lt.fill(pb, {gatePool, indexerPart(lt, "index_kpool_compress_ape")});
                ik.boxes.push_back(pb);
            }
            AnatomyBox keys;
            keys.kind = BoxKind::Latent;
            keys.title = "index keys (cached)";
            keys.cached = true;
            if (wkIo && data.cache.preset == CachePreset::LlamaCpp)
                keys.detail = groupDigits(wkIo->second) + " " + llamaCacheTypeName(data.cache.llamaCacheTypeK) +
                              " values per token (llama.cpp's indexer cache, the -ctk type)";
            else if (wkIo)
                keys.detail = groupDigits(wkIo->second) + " FP8 values + scale per " +
                              (pool > 1 ? groupDigits(pool) + " tokens, and a tail of " + groupDigits(2 * pool) +
                                              " BF16 keys per sequence"
                                        : std::string("token"));
            keys.cacheNote = keysCache;
            ik.boxes.push_back(keys);
            AnatomyBox sel;
            sel.kind = BoxKind::Indexer;
            sel.title = "top-k selection";
            if (wkIo && wpIo) sel.detail = groupDigits(wpIo->second) + " index heads × " + groupDigits(wkIo->second);
            if (cfg.indexTopk) {
                sel.detail += (sel.detail.empty() ? "" : ", ") + std::string("keeps ") +
                              groupDigits(static_cast<std::uint64_t>(*cfg.indexTopk)) + " tokens";
                sel.fromConfig = true;
            }
            ix.columns = {std::move(iq), std::move(ik), std::move(iw)};
            ix.join.push_back(sel);
            out.notes.push_back("Index scores: for every cached index key, the sum over index heads of the head's weight "
                                "× ReLU(index query · key); the top-k tokens are what sparse attention reads.");
        } else {
            // The blocks this layer skips, greyed, and the selection it borrows.
            auto skipped = [](std::string title, std::string detail) {
                AnatomyBox b = box(BoxKind::Indexer, std::move(title), std::move(detail));
                b.skipped = true;
                return b;
            };
            iq.boxes.push_back(skipped("wq_b (not run)", "no index queries on this layer"));
            ik.boxes.push_back(skipped("wk, k_norm (not run)", "no index keys computed"));
            AnatomyBox keys = skipped("index keys (not cached)", "this layer keeps none");
            if (!keysCache.empty()) keys.detail = "saves " + keysCache + " of cache";
            ik.boxes.push_back(keys);
            iw.boxes.push_back(skipped("weights_proj (not run)", "no head weights"));
            AnatomyBox reuse;
            reuse.kind = BoxKind::Indexer;
            reuse.title = "IndexShare";
            reuse.detail = info.reusesLayer >= 0 ? "reuses layer " + std::to_string(info.reusesLayer) +
                                                       "'s top-k selection; no index keys of its own"
                                                 : "reuses an earlier layer's selection";
            reuse.from = info.reusesLayer >= 0 ? "layer " + std::to_string(info.reusesLayer) + "'s top-k"
                                               : "an earlier layer's top-k";
            ix.columns = {std::move(iq), std::move(ik), std::move(iw)};
            ix.join.push_back(reuse);
        }
        out.stages.push_back(std::move(ix));
    }

    // 3. Attention, at prefill (K and V expanded per head) or at decode (kv_b_proj absorbed).
    AnatomyStage att;
    const bool sparse = info.indexer != IndexerRole::None && cfg.indexTopk;
    // The sparse attention reads only the entries the top-k names (DeepSeek-V3.2 Indexer; vLLM
    // deepseek_v2.py passes the indexer's topk_indices to the sparse MLA backend).
    const std::string topkSource = info.indexerWeights     ? std::string("this layer's top-k")
                                   : info.reusesLayer >= 0 ? "layer " + std::to_string(info.reusesLayer) + "'s top-k"
                                                           : std::string("an earlier layer's top-k");
    const std::string over =
        sparse ? "over the " + groupDigits(static_cast<std::uint64_t>(*cfg.indexTopk)) + " selected tokens"
               : std::string("over every cached token");
    AnatomyColumn qh;
    qh.title = "query heads";
    if (qa)
        qh.boxes.push_back(linearBox(lt, qb, "q_b_proj"));
    else if (qDirect)
        qh.boxes.push_back(linearBox(lt, qDirect, "q_proj"));
    if (qbIo && heads && qbIo->second % heads == 0) {
        AnatomyBox h;
        h.kind = BoxKind::Heads;
        h.title = "query heads";
        h.detail = rope ? groupDigits(heads) + " heads × (" + groupDigits(qPer - rope) + " nope + " + groupDigits(rope) +
                              (cfg.mlaUseNope ? " never rotated)" : " rope)")
                        : groupDigits(heads) + " heads × " + groupDigits(qPer) + " (no rope)";
        h.fromConfig = headsFromConfig;
        qh.boxes.push_back(h);
    }
    if (mode == AnatomyMode::Prefill) {
        att.title = "MLA attention at prefill: K and V expanded per head";
        AnatomyColumn kvh;
        kvh.title = "key / value heads (from the KV latent)";
        kvh.boxes.push_back(linearBox(lt, kvb, "kv_b_proj"));
        if (perHead) {
            AnatomyBox h;
            h.kind = BoxKind::Heads;
            h.title = "key and value heads";
            h.detail = groupDigits(heads) + " heads × (" + groupDigits(nope) + " K nope + " + groupDigits(vDim) + " V)";
            h.fromConfig = headsFromConfig;
            kvh.boxes.push_back(h);
        }
        att.columns.push_back(std::move(qh));
        att.columns.push_back(std::move(kvh));
        AnatomyBox core = box(BoxKind::Attention, sparse ? "sparse attention" : "attention",
                              over + (rope ? ": each head's K is its " + groupDigits(nope) + " nope part + the shared " +
                                                 groupDigits(rope) + " RoPE key"
                                           : std::string()));
        if (sparse && !info.indexerWeights) core.from = topkSource; // the owner's, from outside this layer
        att.join.push_back(core);
    } else {
        att.title = "MLA attention at decode: kv_b_proj absorbed, the latent read as is";
        AnatomyBox uk = linearBox(lt, kvb, "kv_b_proj, K half (W_UK)");
        uk.detail = perHead ? "each head's " + groupDigits(nope) + " nope query → " + groupDigits(kvLora.value_or(0)) +
                                  " latent coordinates"
                            : "the query moved into the latent";
        qh.boxes.push_back(uk);
        AnatomyColumn lat;
        lat.title = "the cache, read as is";
        AnatomyBox read = box(BoxKind::Latent, "cached latent + RoPE key",
                              groupDigits(kvLora.value_or(0) + rope) + " values per token; one head for all " +
                                  groupDigits(heads) + " (MQA)");
        read.cached = true;
        lat.boxes.push_back(read);
        att.columns.push_back(std::move(qh));
        att.columns.push_back(std::move(lat));
        AnatomyBox core = box(BoxKind::Attention, sparse ? "sparse attention in latent space" : "attention in latent space",
                              over + ": scores on " + groupDigits(kvLora.value_or(0) + rope) + " values, the " +
                                  groupDigits(kvLora.value_or(0)) + " latent values as V");
        if (sparse && !info.indexerWeights) core.from = topkSource; // the owner's, from outside this layer
        att.join.push_back(core);
        att.join.push_back(box(BoxKind::Linear, "kv_b_proj, V half (W_UV)",
                               perHead ? groupDigits(kvLora.value_or(0)) + " latent → " + groupDigits(vDim) + " per head"
                                       : "the latent back to each head's value width"));
    }
    // Gated MLA: the attention output gated by a sigmoid of the hidden state before o_proj (Tencent Hy4
    // self_attn.linear_gate, gated_mla; Kimi-K3 g_proj, mla_use_output_gate), and learned sinks in the softmax.
    for (const char *g : {"linear_gate", "g_proj"})
        if (const Module *m = attn(lt, g)) {
            AnatomyBox gate = linearBox(lt, m, std::string(g) + " (sigmoid gate)");
            gate.detail += ": the attention output × sigmoid(" + std::string(g) + "(hidden)), per element";
            gate.from = "the layer's input (the gate reads the hidden state)";
            att.join.push_back(gate);
        }
    if (const Module *sink = attn(lt, "learnable_sink_param")) {
        AnatomyBox &core = att.join.front();
        core.detail += ", with learned sinks";
        lt.fill(core, {sink});
    }
    att.join.push_back(linearBox(lt, o, "o_proj"));
    out.stages.push_back(std::move(att));
    out.notes.push_back(mode == AnatomyMode::Prefill
                            ? (rope ? "Prefill shown: at decode kv_b_proj is absorbed into the query and the output, so only "
                                      "the latent + RoPE key is ever cached; K and V per head are never stored."
                                    : "Prefill shown: at decode kv_b_proj is absorbed into the query and the output, so only "
                                      "the latent is ever cached (this model has no RoPE key).")
                            : "Decode shown: the query heads are moved into the latent (W_UK) and attend to the cached " +
                                  groupDigits(kvLora.value_or(0) + rope) +
                                  "-value rows as one shared head; W_UV maps the result back per head before o_proj.");
}

// The indexer's top-k, its size from index_topk when config.json gives it ("keeps 512 compressed rows").
AnatomyBox topkBox(const ModelConfig &cfg, const std::string &before, const std::string &after)
{
    AnatomyBox sel = box(BoxKind::Indexer, "top-k selection", "");
    if (cfg.indexTopk) {
        sel.detail = before + groupDigits(static_cast<std::uint64_t>(*cfg.indexTopk)) + after;
        sel.fromConfig = true;
    }
    return sel;
}

void gqaStage(const LoadedCheckpoint &data, LayerTensors &lt, LayerAttention kind, LayerAnatomy &out)
{
    const ModelConfig &cfg = data.checkpoint.config;
    AnatomyStage stage;
    // Inkling names them wq_du / wk_dv / wv_dv / wo_ud (TensorRT-LLM InklingAttention).
    auto either = [&](const char *a, const char *b) { const Module *m = attn(lt, a); return m ? m : attn(lt, b); };
    const Module *q = either("q_proj", "wq_du"), *k = either("k_proj", "wk_dv"), *v = either("v_proj", "wv_dv"),
                 *o = either("o_proj", "wo_ud");
    const std::string qName = q == attn(lt, "q_proj") ? "q_proj" : "wq_du", kName = k == attn(lt, "k_proj") ? "k_proj" : "wk_dv",
                      vName = v == attn(lt, "v_proj") ? "v_proj" : "wv_dv", oName = o == attn(lt, "o_proj") ? "o_proj" : "wo_ud";
    const auto qIo = lt.inOut(q), kIo = lt.inOut(k);
    // head_dim: config.json's, or hidden / heads; the head counts follow from the shapes.
    std::optional<std::uint64_t> headDim;
    if (cfg.headDim)
        headDim = static_cast<std::uint64_t>(*cfg.headDim);
    else if (cfg.hiddenSize && cfg.numAttentionHeads)
        headDim = static_cast<std::uint64_t>(*cfg.hiddenSize / *cfg.numAttentionHeads);
    std::string flavour = "GQA";
    if (qIo && kIo && headDim && *headDim) {
        const std::uint64_t qh = qIo->second / *headDim, kvh = kIo->second / *headDim;
        flavour = kvh == 1 ? "MQA" : kvh == qh ? "MHA" : "GQA";
    }
    stage.title = flavour + (kind == LayerAttention::Sliding ? " attention, sliding window" : " attention");
    AnatomyColumn cq;
    cq.title = "query";
    cq.boxes.push_back(linearBox(lt, q, qName));
    AnatomyColumn ck;
    ck.title = "key";
    ck.boxes.push_back(linearBox(lt, k, kName));
    AnatomyColumn cv;
    cv.title = "value";
    cv.boxes.push_back(linearBox(lt, v, vName));
    // Qwen3's per-head q_norm / k_norm act on the projections, before RoPE and the cache (vLLM qwen3.py
    // Qwen3Attention.forward); Inkling's short causal convolutions on K and V likewise (k_sconv, v_sconv).
    if (const Module *m = attn(lt, "q_norm")) cq.boxes.push_back(normBox(lt, m, "q_norm"));
    if (const Module *m = attn(lt, "k_norm")) ck.boxes.push_back(normBox(lt, m, "k_norm"));
    for (auto [col, name] : {std::pair{&ck, "k_sconv"}, std::pair{&cv, "v_sconv"}})
        if (const Module *m = attn(lt, name)) {
            AnatomyBox b = box(BoxKind::Linear, name, "a short causal convolution over the last tokens (its state kept per sequence)");
            lt.fill(b, {m});
            col->boxes.push_back(b);
        }
    if (headDim && *headDim) {
        if (qIo) {
            AnatomyBox h = box(BoxKind::Heads, "query heads", groupDigits(qIo->second / *headDim) + " × " + groupDigits(*headDim));
            h.fromConfig = true;
            cq.boxes.push_back(h);
        }
        if (kIo) {
            AnatomyBox h = box(BoxKind::Latent, "K heads (cached)", groupDigits(kIo->second / *headDim) + " × " + groupDigits(*headDim));
            h.fromConfig = true;
            h.cached = true;
            ck.boxes.push_back(h);
            AnatomyBox hv = h;
            hv.title = "V heads (cached)";
            cv.boxes.push_back(hv);
        }
    }
    const CacheBudget &cache = data.cache;
    if (cache.available && cache.kvBytesPerLayer > 0 && ck.boxes.size() > 1)
        ck.boxes.back().cacheNote = groupDigits(static_cast<std::uint64_t>(cache.kvBytesPerLayer)) +
                                    " B/token for K and V (" + cacheTypeWords(cache) + ")";
    stage.columns = {cq, ck, cv};
    // Inkling's learned relative-position bias instead of RoPE: wr_du from the hidden state, rel_logits_proj
    // over the distances the layer sees.
    if (const Module *r = attn(lt, "wr_du")) {
        AnatomyColumn pos;
        pos.title = "position bias";
        pos.boxes.push_back(linearBox(lt, r, "wr_du"));
        AnatomyBox rel = box(BoxKind::Linear, "rel_logits_proj", "a learned bias per distance, added to the scores (no RoPE)");
        lt.fill(rel, lt.under("attn.rel_logits_proj"));
        pos.boxes.push_back(rel);
        stage.columns.push_back(std::move(pos));
    }
    // A sparse layer's indexer (MiniMax-M3: index_q_proj / index_k_proj with their norms, vLLM minimax_m3
    // MiniMaxM3SparseAttention; Qwen3.8-Flash-Next: indexer.index_qk_proj, Qwen4ExpTextQSAIndexer): index
    // queries against index keys kept per token, the top blocks read.
    const Module *iq = attn(lt, "index_q_proj"), *ik = attn(lt, "index_k_proj"), *iqk = lt.exact("self_attn.indexer.index_qk_proj");
    if (iq || ik || iqk) {
        AnatomyColumn ix;
        ix.title = "indexer";
        if (iqk) {
            ix.boxes.push_back(linearBox(lt, iqk, "index_qk_proj", BoxKind::Indexer));
            ix.boxes.back().detail += " (index queries and one key head)";
            std::vector<const Module *> norms;
            for (const char *n : {"self_attn.indexer.q_layernorm", "self_attn.indexer.k_layernorm"})
                if (const Module *m = lt.exact(n)) norms.push_back(m);
            AnatomyBox nb = box(BoxKind::Norm, "q_layernorm, k_layernorm", "");
            lt.fill(nb, norms);
            ix.boxes.push_back(nb);
        } else {
            ix.boxes.push_back(linearBox(lt, iq, "index_q_proj", BoxKind::Indexer));
            if (const Module *m = attn(lt, "index_q_norm")) ix.boxes.push_back(normBox(lt, m, "index_q_norm"));
            ix.boxes.push_back(linearBox(lt, ik, "index_k_proj", BoxKind::Indexer));
            if (const Module *m = attn(lt, "index_k_norm")) ix.boxes.push_back(normBox(lt, m, "index_k_norm"));
        }
        AnatomyBox keys = box(BoxKind::Latent, "index keys (cached)", "one per token");
        keys.cached = true;
        ix.boxes.push_back(keys);
        ix.boxes.push_back(topkBox(cfg, "the ", " tokens it scores highest"));
        stage.columns.push_back(std::move(ix));
    }
    AnatomyBox core = box(BoxKind::Attention, "attention", "softmax over the cached keys");
    if (kind == LayerAttention::Sliding && cfg.slidingWindow)
        core.detail = "over the last " + groupDigits(static_cast<std::uint64_t>(*cfg.slidingWindow)) + " tokens";
    if (iq || ik || iqk) core.detail = "softmax over the keys of the selected tokens";
    if (const Module *sinks = attn(lt, "sinks")) {
        core.detail += ", with learned sinks";
        lt.fill(core, {sinks});
    }
    stage.join.push_back(core);
    stage.join.push_back(linearBox(lt, o, oName));
    if (const Module *m = lt.exact("attn_sconv")) {
        AnatomyBox b = box(BoxKind::Linear, "attn_sconv", "a short causal convolution of the output, into the residual");
        lt.fill(b, {m});
        stage.join.push_back(b);
    }
    out.stages.push_back(std::move(stage));
}

// A host-resident n-gram memory in the layer: DeepSeek-V4.1's Engram (fastllm deepseekv41.cpp RunEngram:
// the token's last n-grams hashed to rows of a table in host memory, the rows projected by wkv into a key per
// stream and a value, gated against the streams, added to them) and Qwen3.8-Flash-Next's n-gram embedding
// (transformers Qwen4ExpTextPLELayer: rows concatenated, key/value projections, norms and a short conv,
// added to the residual streams before the attention block).
void ngramStage(const LoadedCheckpoint &data, LayerTensors &lt, const LayerInfo &info, LayerAnatomy &out)
{
    const CheckpointAnalysis &a = data.analysis;
    std::uint64_t rows = 0, width = 0, tables = 0;
    for (const auto &t : a.hostTables)
        if (t.layer == info.index) rows += t.rows, width = t.width, ++tables;
    if (!tables) return;
    const bool engram = lt.anyUnder("engram");
    const std::string root = engram ? "engram" : "ple"; // the module itself holds engram.q_weight / k_weight
    std::vector<const Module *> table, constants, rest;
    for (const Module *m : lt.under(root)) {
        if (m->tensors.empty()) continue;
        if (const std::string_view r = layerRest(m->tensors.front()->name); !r.starts_with(root + ".")) continue;
        const Category c = m->tensors.empty() ? Category::Other : layerRole(layerRest(m->tensors.front()->name)).category;
        (c == Category::HostTables ? table : c == Category::RouterTables ? constants : rest).push_back(m);
    }
    const auto &cfg = data.checkpoint.config;
    AnatomyStage s;
    s.title = engram ? "Engram: an n-gram memory in host memory" : "n-gram embedding, in host memory";
    AnatomyColumn c;
    c.title = "the token's last n-grams";
    AnatomyBox hash = box(BoxKind::Note, "n-gram hashes",
                          cfg.hostRowsPerToken ? groupDigits(static_cast<std::uint64_t>(*cfg.hostRowsPerToken)) +
                                                     " rows a token: " + cfg.hostRowsFrom
                                               : "rows chosen by hashing the last tokens");
    hash.from = "the token ids (this and the last few tokens)";
    lt.fill(hash, constants);
    c.boxes.push_back(hash);
    AnatomyBox t = box(BoxKind::Latent, "table (host memory)",
                       groupDigits(rows) + " rows × " + groupDigits(width) + (tables > 1 ? " in " + groupDigits(tables) + " tensors" : "") +
                           ": on no GPU; only the rows read cross to it");
    lt.fill(t, table);
    c.boxes.push_back(t);
    s.columns.push_back(std::move(c));
    AnatomyBox mix = box(BoxKind::Linear, engram ? "wkv, q_weight / k_weight" : "key_proj, value_proj, norms, conv1d",
                         engram ? "the rows into a key per stream and a value, gated against the streams, added to them"
                                : "the rows into a key and a value, gated by the hidden state, added to the residual streams");
    lt.fill(mix, rest);
    s.join.push_back(mix);
    s.join.push_back(box(BoxKind::Note, "the residual stream + the n-gram memory", "what the layer's blocks read"));
    out.stages.push_back(std::move(s));
}

// Multi-stream residuals (mHC: DeepSeek-V4, GLM-5.3-Flash): n copies of the hidden state, mixed before
// and after each block by maps the hc_* tensors give.
void hyperConnectionStage(const LoadedCheckpoint &data, LayerTensors &lt, LayerAnatomy &out, bool aroundAttention)
{
    // A stage before each block it wraps (the reference Block.forward: hc_pre mixes the streams into the
    // block's input and returns post and comb; hc_post writes the block's output back into the streams).
    const char *which = aroundAttention ? "attn" : "ffn";
    std::vector<const Module *> mods;
    for (const char *part : {"_fn", "_base", "_scale"})
        if (const Module *m = lt.find(std::string("hc_") + which + part, {})) mods.push_back(m);
    // Tencent Hy4 (hc_attn_layer.hc_pre.hc_fn, hc_mlp_layer...) and Qwen3.8-Flash-Next (attn_hyper_connection.*,
    // mlp_hyper_connection.*: Qwen4ExpTextGatedResidual) name theirs as modules of the layer.
    for (const std::string &root : aroundAttention ? std::vector<std::string>{"hc_attn_layer", "attn_hyper_connection"}
                                                  : std::vector<std::string>{"hc_mlp_layer", "mlp_hyper_connection"})
        for (const Module *m : lt.under(root + ".")) mods.push_back(m);
    if (mods.empty()) return;
    const auto hidden = static_cast<std::uint64_t>(data.checkpoint.config.hiddenSize.value_or(0));
    std::uint64_t streams = 0;
    if (const Module *fn = mods.front(); !fn->tensors.empty() && fn->tensors.front()->shape.size() == 2 && hidden)
        streams = fn->tensors.front()->shape[1] / hidden;
    if (const auto hc = data.checkpoint.config.raw.find("hc_mult"); !streams && hc != data.checkpoint.config.raw.end() && hc->is_number_integer())
        streams = static_cast<std::uint64_t>(std::max<std::int64_t>(hc->get<std::int64_t>(), 0));
    const std::string n = streams ? groupDigits(streams) + " residual streams" : std::string("the residual streams");
    const std::string block = aroundAttention ? "the attention" : "the MLP";
    AnatomyStage stage;
    stage.title = "Hyper-connections around " + block + " (mHC)";
    AnatomyBox b = box(BoxKind::Note, std::string("hc_") + which, "");
    b.detail = "hc_pre mixes " + n + " into " + block + "'s input; after it, hc_post adds its output back with the "
               "post and comb weights";
    lt.fill(b, mods);
    stage.join.push_back(b);
    out.stages.push_back(std::move(stage));
}

// DeepSeek-V4: one shared K=V head, a window of uncompressed rows, a compressor (ratio 4 or 128) and, on
// ratio-4 layers, an indexer choosing among the compressed rows; a grouped output projection.
// "one per 4 tokens", "one per token".
std::string perTokens(std::int64_t ratio)
{
    return ratio == 1 ? "one per token" : "one per " + std::to_string(ratio) + " tokens";
}

void compressedStage(const LoadedCheckpoint &data, LayerTensors &lt, const LayerInfo &info, LayerAnatomy &out)
{
    const ModelConfig &cfg = data.checkpoint.config;
    const CacheBudget &cache = data.cache;
    const std::int64_t ratio = info.compressRatio >= 0 ? info.compressRatio
                               : static_cast<std::size_t>(info.index) < cfg.compressRatios.size()
                                   ? cfg.compressRatios[static_cast<std::size_t>(info.index)]
                                   : 0;
    const std::uint64_t window = static_cast<std::uint64_t>(cfg.slidingWindow.value_or(128));
    // DeepSeek-V4.1 (CSA2, ROCm/ATOM build_attention_topology): a kv_source layer compresses and keeps the
    // rows (and the index keys, wk of its compressor's latent); every other compressed layer reads the
    // rows of the latest source before it and keeps only its window.
    const bool csa2 = !cfg.kvSourceLayers.empty();
    std::int64_t source = -1;
    for (const auto s : cfg.kvSourceLayers)
        if (s <= info.index) source = std::max(source, s);
    const bool reader = csa2 && ratio > 0 && source >= 0 && source != info.index;
    const bool sparse = ratio == 4 || (csa2 && ratio > 0);
    AnatomyStage stage;
    stage.title = ratio == 0 ? "Sliding-window attention (one shared K=V head)"
                  : csa2     ? "Compressed sparse attention (CSA2, ratio " + std::to_string(ratio) + "; " +
                               (reader ? "reads layer " + std::to_string(source) + "'s rows)"
                                       : "its rows are read by the layers after it)")
                  : ratio == 4 ? "Compressed sparse attention (ratio 4, with an indexer)"
                               : "Heavily compressed attention (ratio " + std::to_string(ratio) + ")";
    // The cache group that holds this layer.
    const AttentionLayers *group = nullptr;
    for (const auto &g : cache.attention)
        if (std::find(g.layerIndices.begin(), g.layerIndices.end(), info.index) != g.layerIndices.end()) group = &g;

    AnatomyColumn q;
    q.title = "query";
    q.boxes.push_back(linearBox(lt, lt.exact("attn.wq_a"), "wq_a"));
    q.boxes.back().detail += " (query latent)";
    q.boxes.push_back(normBox(lt, lt.exact("attn.q_norm"), "q_norm"));
    q.boxes.push_back(linearBox(lt, lt.exact("attn.wq_b"), "wq_b"));
    if (cfg.numAttentionHeads && cfg.headDim) {
        AnatomyBox h = box(BoxKind::Heads, "query heads",
                           groupDigits(static_cast<std::uint64_t>(*cfg.numAttentionHeads)) + " × " +
                               groupDigits(static_cast<std::uint64_t>(*cfg.headDim)));
        h.fromConfig = true;
        q.boxes.push_back(h);
    }
    stage.columns.push_back(std::move(q));

    AnatomyColumn kv;
    kv.title = "key = value";
    kv.boxes.push_back(linearBox(lt, lt.exact("attn.wkv"), "wkv"));
    kv.boxes.back().detail += " (one head, K = V)";
    kv.boxes.push_back(normBox(lt, lt.exact("attn.kv_norm"), "kv_norm"));
    AnatomyBox win = box(BoxKind::Latent, "window (cached per sequence)",
                         "the last " + groupDigits(window) + " rows, uncompressed");
    win.cached = true;
    if (cache.available && cache.kvBytesPerLayer > 0)
        win.cacheNote = groupDigits(window * static_cast<std::uint64_t>(cache.kvBytesPerLayer)) + " B per sequence";
    kv.boxes.push_back(win);
    stage.columns.push_back(std::move(kv));

    if (reader) {
        AnatomyColumn comp;
        comp.title = "compressed rows";
        AnatomyBox rows = box(BoxKind::Latent, "layer " + std::to_string(source) + "'s compressed rows",
                              "read, not stored here (kv_source_layer_ids): " + perTokens(ratio));
        rows.fromConfig = true;
        rows.from = "layer " + std::to_string(source) + " (its compressed rows, kv_source_layer_ids)";
        comp.boxes.push_back(rows);
        stage.columns.push_back(std::move(comp));
    } else if (ratio > 0) {
        AnatomyColumn comp;
        comp.title = "compressor";
        AnatomyBox c = box(BoxKind::Linear, "wkv / wgate / ape / norm",
                           (ratio == 1 ? std::string("projects every token into one row") : "pools every " + std::to_string(ratio) + " tokens into one row") +
                               (ratio == 4 && !csa2 ? " (overlapping windows: twice the width)" : ""));
        lt.fill(c, lt.under("attn.compressor")); // its ape is a leaf of the module itself
        comp.boxes.push_back(c);
        AnatomyBox rows = box(BoxKind::Latent, "compressed rows (cached)", perTokens(ratio));
        rows.cached = true;
        if (group && group->compression > 0)
            rows.cacheNote = (group->bytesPerTokenPerLayer % group->compression == 0
                                  ? groupDigits(group->bytesPerTokenPerLayer / group->compression)
                                  : fixedPoint(group->bytesPerToken(), 4)) +
                             " B/token" + (ratio == 4 ? " with the index rows" : "");
        comp.boxes.push_back(rows);
        stage.columns.push_back(std::move(comp));
    }
    if (info.indexer == IndexerRole::Shared && sparse) {
        AnatomyColumn ix;
        ix.title = "indexer";
        AnatomyBox sel = box(BoxKind::Indexer, "layer " + std::to_string(info.reusesLayer) + "'s top-k",
                             "reused: this layer runs no indexer (index_source_layer_ids)");
        sel.fromConfig = true;
        sel.from = "layer " + std::to_string(info.reusesLayer) + " (its top-k selection)";
        ix.boxes.push_back(sel);
        stage.columns.push_back(std::move(ix));
    } else if (ratio == 4 || info.indexerWeights) {
        AnatomyColumn ix;
        ix.title = "indexer";
        ix.boxes.push_back(linearBox(lt, indexerPart(lt, "wq_b"), "wq_b", BoxKind::Indexer));
        ix.boxes.back().detail += " (from the query latent)";
        ix.boxes.push_back(linearBox(lt, indexerPart(lt, "weights_proj"), "weights_proj", BoxKind::Indexer));
        if (csa2) {
            // Index keys from the compressor's latent on a source layer; a re-indexing layer scores its
            // own queries against its source's keys.
            if (const Module *wk = indexerPart(lt, "wk")) {
                ix.boxes.push_back(linearBox(lt, wk, "wk", BoxKind::Indexer));
                ix.boxes.back().detail += " (index keys from the compressed latent)";
                ix.boxes.push_back(normBox(lt, indexerPart(lt, "k_norm"), "k_norm"));
                AnatomyBox keys = box(BoxKind::Latent, "index keys (cached)", "one per compressed row");
                keys.cached = true;
                ix.boxes.push_back(keys);
            } else {
                // A column of its own: the keys come from outside this layer.
                AnatomyColumn theirs;
                theirs.title = "index keys";
                AnatomyBox keys = box(BoxKind::Indexer, "layer " + std::to_string(source) + "'s index keys",
                                      "scored with this layer's own queries (re-index)");
                keys.fromConfig = true;
                keys.from = "layer " + std::to_string(source) + " (its index keys)";
                theirs.boxes.push_back(keys);
                stage.columns.push_back(std::move(theirs));
            }
        } else {
            AnatomyBox ic = box(BoxKind::Indexer, "index compressor", "its own rows, one per " + std::to_string(ratio) + " tokens");
            lt.fill(ic, lt.under("attn.indexer.compressor"));
            ix.boxes.push_back(ic);
        }
        ix.boxes.push_back(topkBox(cfg, "keeps ", " compressed rows"));
        stage.columns.push_back(std::move(ix));
    }
    AnatomyBox core = box(BoxKind::Attention, "attention",
                          ratio == 0 ? "over the window"
                          : sparse   ? "over the window and the selected compressed rows"
                                     : "over the window and every compressed row");
    if (const Module *sink = lt.exact("attn.attn_sink")) {
        core.detail += ", with learned sinks";
        lt.fill(core, {sink});
    }
    stage.join.push_back(core);
    AnatomyBox o = box(BoxKind::Linear, "wo_a → wo_b", "");
    if (cfg.numAttentionHeads) o.detail = "grouped output projection";
    if (const auto g = data.checkpoint.config.raw.find("o_groups");
        g != data.checkpoint.config.raw.end() && g->is_number_integer())
        o.detail = std::to_string(g->get<std::int64_t>()) + " head groups, each projected down, then joined";
    lt.fill(o, {lt.exact("attn.wo_a"), lt.exact("attn.wo_b")});
    stage.join.push_back(o);
    out.stages.push_back(std::move(stage));
    if (group && group->stateBytesPerLayer)
        out.notes.push_back("Per sequence this layer holds " + groupDigits(*group->stateBytesPerLayer) + " B (" +
                            group->note + ").");
}

// A recurrent state kept per sequence, with what the cache budget holds for its kind of layer.
AnatomyBox stateBox(const LoadedCheckpoint &data, AttentionKind kind, std::string title, std::string detail)
{
    AnatomyBox state = box(BoxKind::Latent, std::move(title), std::move(detail));
    state.cached = true;
    for (const auto &g : data.cache.attention)
        if (g.kind == kind && g.stateBytesPerLayer)
            state.cacheNote = groupDigits(*g.stateBytesPerLayer) + " B per sequence (" + g.note + ")";
    return state;
}

// Kimi Delta Attention (Kimi-Linear, GLM-5.3-Flash): short convolutions on q, k, v; per-channel decay
// (f_a → f_b), an output gate (g_a → g_b), beta (b_proj); a recurrent state per sequence instead of a cache.
void kdaStage(const LoadedCheckpoint &data, LayerTensors &lt, LayerAnatomy &out)
{
    // vLLM layers/kda.py (KimiDeltaAttention.forward) and models/kimi_linear.py: q, k, v each through a
    // short causal conv1d and SiLU, q and k L2-normalised in the kernel; the decay (f_a → f_b with A_log,
    // dt_bias) and beta (b_proj → sigmoid) read the hidden state beside them; all of them enter the
    // delta-rule update of the per-head state; the output gate (g_a → g_b) gates o_norm, not the state.
    AnatomyStage stage;
    stage.title = "Kimi Delta Attention (linear, recurrent state)";
    for (const char *x : {"q", "k", "v"}) {
        AnatomyColumn c;
        c.title = std::string(x);
        c.boxes.push_back(linearBox(lt, attn(lt, std::string(x) + "_proj"), std::string(x) + "_proj"));
        AnatomyBox conv = box(BoxKind::Linear, std::string(x) + "_conv1d", "short convolution");
        if (const Module *m = attn(lt, std::string(x) + "_conv1d")) {
            lt.fill(conv, {m});
            if (!m->tensors.empty() && m->tensors.front()->shape.size() == 3)
                conv.detail = "short convolution, kernel " + groupDigits(m->tensors.front()->shape[2]);
        }
        c.boxes.push_back(conv);
        c.boxes.push_back(box(BoxKind::Heads, std::string(x) == "v" ? "SiLU" : "SiLU, L2 norm",
                              std::string(x) == "v" ? "per channel" : "per head, in the kernel"));
        stage.columns.push_back(std::move(c));
    }
    AnatomyColumn decayColumn;
    decayColumn.title = "decay";
    AnatomyBox decay = box(BoxKind::Linear, "f_a → f_b, A_log, dt_bias", "per-channel decay of the state");
    std::vector<const Module *> dm;
    for (const char *n : {"f_a_proj", "f_b_proj", "A_log", "dt_bias"})
        if (const Module *m = attn(lt, n)) dm.push_back(m);
    lt.fill(decay, dm);
    decayColumn.boxes.push_back(decay);
    stage.columns.push_back(std::move(decayColumn));
    AnatomyColumn betaColumn;
    betaColumn.title = "beta";
    AnatomyBox beta = box(BoxKind::Linear, "b_proj → sigmoid", "write strength (beta) per head");
    lt.fill(beta, {attn(lt, "b_proj")});
    betaColumn.boxes.push_back(beta);
    stage.columns.push_back(std::move(betaColumn));

    stage.join.push_back(stateBox(data, AttentionKind::Kda, "delta rule: the recurrent state (kept per sequence)",
                                  "S ← decay·S + β·k(v − Sᵀk)ᵀ per head, read by q; heads × head dim × head dim"));
    AnatomyBox gated = normBox(lt, attn(lt, "o_norm"), "o_norm");
    gated.title = "o_norm(core, g): gated RMSNorm";
    lt.fill(gated, {attn(lt, "g_a_proj"), attn(lt, "g_b_proj")});
    gated.detail = "the output gate g = g_b(g_a(hidden state)) scales the normalised output";
    gated.from = "the hidden state: g_a → g_b";
    stage.join.push_back(gated);
    stage.join.push_back(linearBox(lt, attn(lt, "o_proj"), "o_proj"));
    out.stages.push_back(std::move(stage));
}

// Gated DeltaNet (Qwen3-Next; vLLM models/qwen3_next.py Qwen3NextGatedDeltaNet): in_proj_qkvz gives q, k,
// v and z, in_proj_ba gives b and a; conv1d and SiLU on q, k, v; beta = sigmoid(b), the decay from
// A_log, dt_bias and a; the gated delta rule keeps a state per head; norm(core, z) gates, out_proj.
void gatedDeltaNetStage(const LoadedCheckpoint &data, LayerTensors &lt, LayerAnatomy &out)
{
    const auto part = [&](const char *name) { return lt.find(name, {"linear_attn"}); };
    // Qwen3-Next fuses qkvz and ba; Qwen3.5 and Qwen3.8-Flash-Next project them apart (in_proj_qkv, in_proj_z,
    // in_proj_b, in_proj_a; transformers Qwen4ExpTextGatedDeltaNet), the same computation.
    const bool split = !part("in_proj_qkvz") && part("in_proj_qkv");
    AnatomyStage stage;
    stage.title = "Gated DeltaNet (linear, recurrent state)";
    AnatomyColumn qkv;
    qkv.title = split ? "q, k, v" : "q, k, v (and z)";
    qkv.boxes.push_back(split ? linearBox(lt, part("in_proj_qkv"), "in_proj_qkv") : linearBox(lt, part("in_proj_qkvz"), "in_proj_qkvz"));
    AnatomyBox conv = box(BoxKind::Linear, "conv1d", "short convolution over q, k, v");
    lt.fill(conv, {part("conv1d")});
    qkv.boxes.push_back(conv);
    qkv.boxes.push_back(box(BoxKind::Heads, "SiLU, L2 norm of q and k", "per head"));
    stage.columns.push_back(std::move(qkv));
    AnatomyColumn gates;
    gates.title = "beta and decay";
    if (split) {
        AnatomyBox ba = box(BoxKind::Linear, "in_proj_b, in_proj_a", "beta and the decay's input, per value head");
        lt.fill(ba, {part("in_proj_b"), part("in_proj_a")});
        gates.boxes.push_back(ba);
    } else {
        gates.boxes.push_back(linearBox(lt, part("in_proj_ba"), "in_proj_ba"));
    }
    AnatomyBox decay = box(BoxKind::Linear, "sigmoid(b); decay from A_log, dt_bias, a", "per head");
    lt.fill(decay, {part("A_log"), part("dt_bias")});
    gates.boxes.push_back(decay);
    stage.columns.push_back(std::move(gates));
    stage.join.push_back(stateBox(data, AttentionKind::GatedDeltaNet,
                                  "gated delta rule: the recurrent state (kept per sequence)",
                                  "one value-width × key-width state per value head, decayed and written every token"));
    if (split) {
        AnatomyColumn z;
        z.title = "output gate";
        z.boxes.push_back(linearBox(lt, part("in_proj_z"), "in_proj_z"));
        stage.columns.push_back(std::move(z));
    }
    AnatomyBox gated = normBox(lt, part("norm"), "norm");
    gated.title = "norm(core, z): gated RMSNorm";
    gated.detail = split ? "z, from in_proj_z, gates the normalised output" : "z, from in_proj_qkvz, gates the normalised output";
    gated.from = split ? "in_proj_z" : "z (in_proj_qkvz)";
    stage.join.push_back(gated);
    stage.join.push_back(linearBox(lt, part("out_proj"), "out_proj"));
    out.stages.push_back(std::move(stage));
}

void linearStage(const LoadedCheckpoint &data, LayerTensors &lt, const LayerInfo &info, LayerAnatomy &out)
{
    if (info.mixer == MixerKind::Kda && attn(lt, "q_conv1d")) {
        kdaStage(data, lt, out);
        return;
    }
    if (info.mixer == MixerKind::GatedDeltaNet &&
        (lt.find("in_proj_qkvz", {"linear_attn"}) || lt.find("in_proj_qkv", {"linear_attn"}))) {
        gatedDeltaNetStage(data, lt, out);
        return;
    }
    AnatomyStage stage;
    stage.title = "Linear attention (recurrent state)";
    AnatomyBox b = box(BoxKind::Attention, "linear attention", "a fixed state per sequence, not per token");
    std::vector<const Module *> mods = lt.under("linear_attn");
    for (const Module *m : lt.under("mamba")) mods.push_back(m);
    lt.fill(b, mods);
    for (const auto &g : data.cache.attention)
        if ((g.kind == AttentionKind::Linear || g.kind == AttentionKind::GatedDeltaNet ||
             g.kind == AttentionKind::Mamba2) &&
            g.stateBytesPerLayer) {
            b.cached = true;
            b.cacheNote = groupDigits(*g.stateBytesPerLayer) + " B per sequence";
        }
    stage.join.push_back(b);
    out.stages.push_back(std::move(stage));
}

void ffnStage(const LoadedCheckpoint &data, LayerTensors &lt, const LayerInfo &info, LayerAnatomy &out)
{
    const ModelConfig &cfg = data.checkpoint.config;
    const CheckpointAnalysis &a = data.analysis;
    const char *const parents[] = {"mlp", "block_sparse_moe", "feed_forward", "moe", "mixer", "ffn"};
    std::string parent;
    for (const char *p : parents)
        if (lt.anyUnder(p)) parent = p;
    if (parent.empty()) return;
    const std::uint64_t hidden = static_cast<std::uint64_t>(cfg.hiddenSize.value_or(0));
    AnatomyStage stage;

    std::vector<const Module *> experts = lt.under(parent + ".experts.");
    if (experts.empty()) {
        stage.title = "Dense MLP";
        AnatomyBox b = box(BoxKind::Linear, "gate / up / down", "");
        const Module *down = lt.find("down_proj", {parent});
        if (!down) down = lt.find("w2", {parent});
        if (auto io = lt.inOut(down)) b.detail = "width " + groupDigits(io->first);
        lt.fill(b, lt.under(parent + "."));
        stage.join.push_back(b);
        out.stages.push_back(std::move(stage));
        return;
    }
    stage.title = "Mixture of experts";
    // Router: the gate's [experts, hidden] weight, and its bias when it has one.
    AnatomyColumn routed;
    routed.title = "routed experts";
    AnatomyBox router = box(BoxKind::Router, "router", "");
    const Module *gate = lt.find("gate", {parent});
    if (!gate) gate = lt.find("router", {parent});
    const int E = info.routedExperts;
    std::string biasDtype;
    if (gate)
        for (const TensorInfo *t : gate->tensors)
            if (t->name.ends_with("e_score_correction_bias") || t->name.ends_with(".bias"))
                biasDtype = std::string(dtypeName(t->dtype));
    lt.fill(router, {gate});
    router.detail = groupDigits(static_cast<std::uint64_t>(E)) + " experts";
    if (cfg.numExpertsPerTok) {
        router.detail += ", top-" + std::to_string(*cfg.numExpertsPerTok);
        router.fromConfig = true;
    }
    if (cfg.nGroup && *cfg.nGroup > 1)
        router.detail += ", " + std::to_string(*cfg.nGroup) + " groups keep " + std::to_string(cfg.topkGroup.value_or(*cfg.nGroup));
    if (!biasDtype.empty())
        router.detail += (data.checkpoint.config.topkMethod == "noaux_tc" ||
                                  std::any_of(router.tensors.begin(), router.tensors.end(),
                                              [](const std::string &n) { return n.ends_with("e_score_correction_bias"); })
                              ? ", correction bias " : ", bias ") +
                         biasDtype;
    // DeepSeek-V4's hash layers still score (vLLM / the reference Gate.forward: scores are
    // sqrtsoftplus(x·W) on every layer): tid2eid[token id] only chooses the experts, whose scores weigh them.
    if (info.hashRouted)
        router.detail += ", hash-routed: tid2eid[token id] chooses the experts; their " +
                         (cfg.scoringFunc.empty() ? std::string("gate") : cfg.scoringFunc) + " scores weigh them";
    routed.boxes.push_back(router);
    // A latent MoE (Kimi-K3: routed_expert_down_proj into routed_expert_hidden_size, its norm, the experts at
    // that width, routed_expert_up_proj back; vLLM kimi_k3 latent MoE): the experts run on the latent.
    const Module *latentDown = lt.exact(parent + ".routed_expert_down_proj");
    if (latentDown) {
        AnatomyBox d = linearBox(lt, latentDown, "routed_expert_down_proj");
        d.detail += " (into the experts' latent)";
        routed.boxes.push_back(d);
        if (const Module *n = lt.exact(parent + ".routed_expert_norm")) routed.boxes.push_back(normBox(lt, n, "routed_expert_norm"));
    }

    AnatomyBox ex = box(BoxKind::Experts, "routed experts", "");
    std::uint64_t width = 0;
    lt.fill(ex, experts);
    for (const Module *m : experts) {
        if (width) break;
        for (const TensorInfo *t : m->tensors) {
            const std::string_view last = lastSegment(t->name);
            const bool down = t->name.find("down_proj") != std::string::npos || t->name.find(".w2.") != std::string::npos ||
                              t->name.find(".w2_weight") != std::string::npos;
            if (!width && down && hidden && last != "bias" && !t->name.ends_with("_bias") && a.parametersOf(*t)) {
                // The down projection's output rows are the experts' output width (the hidden size, or a
                // latent MoE's narrower one: Kimi-K3's 3584); its logical parameters over them, the width.
                const bool fused = t->name.find(".experts.down_proj") != std::string::npos ||
                                   t->name.find(".experts.w2_weight") != std::string::npos;
                const std::uint64_t p = a.parametersOf(*t) / (fused && E > 0 ? static_cast<std::uint64_t>(E) : 1);
                const std::size_t outDim = fused ? 1 : 0;
                const std::uint64_t rows = t->shape.size() > outDim && t->shape[outDim] ? t->shape[outDim] : hidden;
                width = p / rows;
            }
        }
    }
    ex.detail = groupDigits(static_cast<std::uint64_t>(E)) + " experts";
    if (width) ex.detail += " × width " + groupDigits(width);
    for (const auto &row : a.quantLayout)
        if (row.category == Category::RoutedExperts && !row.format.empty()) ex.detail += ", " + row.format;
    routed.boxes.push_back(ex);
    if (const Module *up = lt.exact(parent + ".routed_expert_up_proj"); latentDown && up) {
        AnatomyBox u = linearBox(lt, up, "routed_expert_up_proj");
        u.detail += " (the weighted latent back to the hidden width)";
        routed.boxes.push_back(u);
    }
    stage.columns.push_back(std::move(routed));

    std::vector<const Module *> shared = lt.under(parent + ".shared_experts.");
    if (const Module *m = lt.exact(parent + ".shared_experts")) shared.push_back(m); // Inkling's stacked shared_w13_weight
    for (const Module *m : lt.under(parent + ".shared_expert.")) shared.push_back(m);
    if (const Module *g = lt.find("shared_expert_gate", {parent})) shared.push_back(g);
    if (!shared.empty()) {
        AnatomyColumn sc;
        sc.title = "shared experts";
        AnatomyBox sb = box(BoxKind::Experts, "shared experts", "every token");
        lt.fill(sb, shared);
        for (const Module *m : shared) {
            for (const TensorInfo *t : m->tensors)
                if (t->name.find("down_proj") != std::string::npos && hidden && a.parametersOf(*t) &&
                    sb.detail == "every token")
                    sb.detail = "width " + groupDigits(a.parametersOf(*t) / hidden) + ", every token";
        }
        sc.boxes.push_back(sb);
        stage.columns.push_back(std::move(sc));
    }
    AnatomyBox sum = box(BoxKind::Note, "weighted sum", "the chosen experts' outputs, by their router weights");
    stage.join.push_back(sum);
    out.stages.push_back(std::move(stage));
}

} // namespace

std::string_view layerAttentionName(LayerAttention a)
{
    switch (a) {
    case LayerAttention::Mla:
        return "MLA";
    case LayerAttention::Gqa:
        return "GQA";
    case LayerAttention::Sliding:
        return "sliding";
    case LayerAttention::Linear:
        return "linear";
    case LayerAttention::None:
        return "none";
    case LayerAttention::Compressed:
        return "compressed";
    }
    return "";
}

std::vector<StackRun> layerStack(const LoadedCheckpoint &data)
{
    const CheckpointAnalysis &a = data.analysis;
    std::vector<StackRun> runs;
    for (const LayerInfo &info : a.layers) {
        if (runs.empty() || runs.back().kind != info.kind || runs.back().last + 1 != info.index)
            runs.push_back({info.index, info.index, info.kind, {}, {}, {}, {}});
        runs.back().last = info.index;
        runs.back().compression.push_back(info.compressRatio);
        runs.back().attention.push_back(attentionOf(info));
        runs.back().indexer.push_back(info.indexer);
        runs.back().reuses.push_back(info.reusesLayer);
    }
    return runs;
}

TensorsByLayer tensorsByLayer(const LoadedCheckpoint &data)
{
    TensorsByLayer out(static_cast<std::size_t>(std::max(0, data.analysis.layerCount)));
    for (const auto &shard : data.checkpoint.shards)
        for (const auto &t : shard.tensors)
            if (const int l = data.analysis.layerOf(t.name); l >= 0) out[static_cast<std::size_t>(l)].push_back(&t);
    return out;
}

LayerAnatomy layerAnatomy(const LoadedCheckpoint &data, int layer, const TensorsByLayer *index, AnatomyMode mode)
{
    LayerAnatomy out;
    out.layer = layer;
    const CheckpointAnalysis &a = data.analysis;
    if (layer < 0 || layer >= a.layerCount) {
        out.heading = "No layer " + std::to_string(layer);
        return out;
    }
    const LayerInfo &info = a.layers[static_cast<std::size_t>(layer)];
    LayerTensors lt(data, layer, index);
    const LayerAttention att = attentionOf(info);
    const char *kind = info.kind == LayerKind::Dense ? "dense" : info.kind == LayerKind::Moe ? "MoE" : "MTP";
    // DeepSeek-V4's ratio-0 layers keep their window only: said so, not "compressed".
    const std::string attentionWords =
        att == LayerAttention::Compressed && info.compressRatio == 0 ? "window only" : std::string(layerAttentionName(att));
    out.heading = "Layer " + std::to_string(layer) + " · " + kind + " · " + attentionWords;
    if (info.indexer == IndexerRole::Full) out.heading += " · indexer full";
    if (info.indexer == IndexerRole::Shared)
        out.heading += " · indexer shared" +
                       (info.reusesLayer >= 0 ? " (reuses layer " + std::to_string(info.reusesLayer) + ")" : std::string());

    // An MTP block's input (vLLM deepseek_mtp.py DeepSeekMultiTokenPredictorLayer.forward): the next
    // token's embedding through enorm, the hidden state it predicts from through hnorm, joined by
    // eh_proj(cat(...)); DeepSeek-V4 projects each apart (e_proj, h_proj) and adds them into its streams.
    const bool mtp = info.kind == LayerKind::Mtp;
    if (mtp) {
        AnatomyStage s;
        s.title = "Multi-token prediction input";
        AnatomyColumn e, h;
        e.title = "the next token's embedding";
        h.title = "the hidden state it predicts from";
        if (const Module *m = lt.exact("embed_tokens")) { // DeepSeek-V3's MTP block holds its own copy
            e.boxes.push_back(linearBox(lt, m, "embed_tokens"));
            e.boxes.back().detail = "the next token's embedding (a copy of the main model's table)";
        }
        if (const Module *m = lt.exact("enorm")) e.boxes.push_back(normBox(lt, m, "enorm"));
        if (const Module *m = lt.exact("e_proj")) e.boxes.push_back(linearBox(lt, m, "e_proj"));
        if (const Module *m = lt.exact("hnorm")) h.boxes.push_back(normBox(lt, m, "hnorm"));
        if (const Module *m = lt.exact("h_proj")) h.boxes.push_back(linearBox(lt, m, "h_proj"));
        if (const Module *m = lt.exact("eh_proj")) {
            s.join.push_back(linearBox(lt, m, "eh_proj"));
            s.join.back().detail += " (the two, concatenated)";
        } else if (lt.exact("e_proj") && lt.exact("h_proj")) {
            s.join.push_back(box(BoxKind::Note, "sum", "h_proj(hnorm(h)) + e_proj(enorm(e)), added to every stream"));
        }
        if (!e.boxes.empty()) s.columns.push_back(std::move(e));
        if (!h.boxes.empty()) s.columns.push_back(std::move(h));
        if (!s.columns.empty() || !s.join.empty()) out.stages.push_back(std::move(s));
    }
    ngramStage(data, lt, info, out);
    hyperConnectionStage(data, lt, out, true);
    switch (att) {
    case LayerAttention::Mla:
        mlaStage(data, lt, info, out, mode);
        break;
    case LayerAttention::Compressed:
        compressedStage(data, lt, info, out);
        break;
    case LayerAttention::Gqa:
    case LayerAttention::Sliding:
        gqaStage(data, lt, att, out);
        break;
    case LayerAttention::Linear:
        linearStage(data, lt, info, out);
        break;
    case LayerAttention::None:
        break;
    }
    hyperConnectionStage(data, lt, out, false);
    ffnStage(data, lt, info, out);
    // Its prediction (vLLM SharedHead: norm, then the head the main model shares; DeepSeek-V4's MTPBlock
    // first mixes its streams into one with hc_head_*).
    if (mtp) {
        AnatomyStage s;
        s.title = "Multi-token prediction head";
        std::vector<const Module *> hc;
        for (const char *n : {"hc_head_fn", "hc_head_base", "hc_head_scale"})
            if (const Module *m = lt.exact(n)) hc.push_back(m);
        if (!hc.empty()) {
            AnatomyBox b = box(BoxKind::Note, "hc_head", "mixes the streams into one hidden state");
            lt.fill(b, hc);
            s.join.push_back(b);
        }
        const Module *norm = lt.exact("shared_head.norm");
        if (!norm) norm = lt.exact("norm");
        if (norm) s.join.push_back(normBox(lt, norm, norm == lt.exact("norm") ? "norm" : "shared_head.norm"));
        const Module *head = lt.exact("shared_head.head");
        AnatomyBox logits = head ? linearBox(lt, head, "shared_head.head") : box(BoxKind::Note, "lm_head", "");
        logits.detail = (head ? logits.detail + ": " : std::string()) +
                        "the logits of the token after next" + (head ? "" : " (the main model's lm_head, shared)");
        s.join.push_back(logits);
        out.stages.push_back(std::move(s));
    }
    // The norms around the blocks are named in a note rather than drawn.
    std::vector<std::string> norms;
    for (auto &name : lt.unplaced())
        (layerRole(layerRest(name)).category == Category::Norms ? norms : out.unplaced).push_back(std::move(name));
    if (!norms.empty())
        out.notes.push_back(std::to_string(norms.size()) + " norm tensor" + (norms.size() == 1 ? "" : "s") +
                            " around the blocks (" + norms.front() + (norms.size() > 1 ? ", …)" : ")"));
    return out;
}

} // namespace atlas
