// The Anatomy view's model: the layer stack and one layer's boxes, every number checked against the
// shapes the writer put on disk (the spec's own knobs), never against program output.
#include "anatomy.h"
#include "anatomy_graph.h"
#include "byte_source.h"
#include "checkpoint_reader.h"
#include "fixture_writer.h"
#include "report.h"
#include "synthetic_layout.h"

#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <set>

using namespace atlas;

namespace {

LoadedCheckpoint load(const QString &dir)
{
    LoadedCheckpoint l;
    LocalDirectorySource source(dir.toStdString());
    l.checkpoint = readCheckpoint(source);
    l.analysis = analyze(l.checkpoint);
    l.cache = computeCacheBudget(l.checkpoint, l.analysis, {});
    return l;
}

const AnatomyBox *findBox(const LayerAnatomy &a, const std::string &title)
{
    for (const auto &stage : a.stages) {
        for (const auto &col : stage.columns)
            for (const auto &b : col.boxes)
                if (b.title == title) return &b;
        for (const auto &b : stage.join)
            if (b.title == title) return &b;
    }
    return nullptr;
}

std::string n(std::int64_t v)
{
    return groupDigits(static_cast<std::uint64_t>(v));
}

// Every tensor of the layer is in exactly one box, in the norms note, or listed as unplaced.
void checkEveryTensorAccountedFor(const LoadedCheckpoint &l, const LayerAnatomy &a)
{
    std::set<std::string> inBoxes;
    for (const auto &stage : a.stages) {
        for (const auto &col : stage.columns)
            for (const auto &b : col.boxes)
                for (const auto &t : b.tensors)
                    QVERIFY2(inBoxes.insert(t).second, t.c_str());
        for (const auto &b : stage.join)
            for (const auto &t : b.tensors)
                QVERIFY2(inBoxes.insert(t).second, t.c_str());
    }
    for (const auto &shard : l.checkpoint.shards)
        for (const auto &t : shard.tensors) {
            if (l.analysis.layerOf(t.name) != a.layer) continue;
            const bool norm = layerRole(placeOf(t.name).rest).category == Category::Norms;
            const bool unplaced = std::find(a.unplaced.begin(), a.unplaced.end(), t.name) != a.unplaced.end();
            QVERIFY2(inBoxes.count(std::string(t.name)) + norm + unplaced == 1, std::string(t.name).c_str());
        }
}

} // namespace

class TestAnatomy : public QObject
{
    Q_OBJECT

private slots:
    void glmMlaLayer()
    {
        const synth::LayoutSpec spec = synth::smallLayout();
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        const LoadedCheckpoint l = load(dir.path());
        const int layer = static_cast<int>(spec.firstDense); // the first MoE layer
        const LayerAnatomy a = layerAnatomy(l, layer);
        QVERIFY(a.unplaced.empty());
        checkEveryTensorAccountedFor(l, a);

        QCOMPARE(findBox(a, "q_a_proj")->detail, n(spec.hidden) + " → " + n(spec.qLoraRank) + " (query latent)");
        QCOMPARE(findBox(a, "q_b_proj")->detail, n(spec.qLoraRank) + " → " + n(spec.heads * (spec.nopeDim + spec.ropeDim)));
        QCOMPARE(findBox(a, "kv_a_proj_with_mqa")->detail, n(spec.hidden) + " → " + n(spec.kvLoraRank + spec.ropeDim) +
                                                               ", split " + n(spec.kvLoraRank) + " latent + " +
                                                               n(spec.ropeDim) + " k_pe");
        const AnatomyBox *latent = findBox(a, "normalised latent (cached)");
        QVERIFY(latent && latent->cached);
        QCOMPARE(latent->detail, n(spec.kvLoraRank) + " of the " + n(spec.kvLoraRank + spec.ropeDim) +
                                     " values a token caches");
        QCOMPARE(latent->cacheNote, n(2 * (spec.kvLoraRank + spec.ropeDim)) + " B/token with k_pe (bf16)");
        // The order the engines compute (vLLM deepseek_v2.py DeepseekV2MLAAttention.forward): split, then
        // kv_a_layernorm on the latent and rotary_emb on k_pe, and only then the cache write of
        // "normalised latent ‖ rotated k_pe". Each column is a chain, top to bottom.
        const auto chain = [&](const LayerAnatomy &la, const std::string &first) {
            for (const auto &stage : la.stages)
                for (const auto &c : stage.columns)
                    if (!c.boxes.empty() && c.boxes.front().title == first) {
                        std::vector<std::string> titles;
                        for (const auto &b : c.boxes)
                            titles.push_back(b.title);
                        return titles;
                    }
            return std::vector<std::string>{};
        };
        QCOMPARE(chain(a, "kv_a_proj_with_mqa"),
                 (std::vector<std::string>{"kv_a_proj_with_mqa", "kv_a_layernorm", "normalised latent (cached)"}));
        QCOMPARE(chain(a, "k_pe"), (std::vector<std::string>{"k_pe", "rotary position (RoPE)", "rotated k_pe (cached)"}));
        // The sparse attention reads what a top-k selected: this layer's own (an edge of its graph) or its
        // owner's (an input from outside the layer).
        const AnatomyBox *sparse = findBox(a, "sparse attention");
        QVERIFY(sparse);
        if (l.analysis.layers[std::size_t(layer)].indexerWeights) {
            const auto in = anatomyGraph(l, layer).inputsOf("sparse_attention");
            QVERIFY(std::find(in.begin(), in.end(), "top_k_selection") != in.end());
        } else {
            QVERIFY2(sparse->from.find("top-k") != std::string::npos, sparse->from.c_str());
        }
        QCOMPARE(findBox(a, "key and value heads")->detail,
                 n(spec.heads) + " heads × (" + n(spec.nopeDim) + " K nope + " + n(spec.vDim) + " V)");
        QVERIFY(findBox(a, "key and value heads")->fromConfig); // the head count is config's
        QCOMPARE(findBox(a, "o_proj")->detail, n(spec.heads * spec.vDim) + " → " + n(spec.hidden));
        // Logical parameters and dtypes on hover: q_a_proj's FP8 weight with its F32 block scales apart.
        QCOMPARE(findBox(a, "q_a_proj")->parameters, std::uint64_t(spec.qLoraRank * spec.hidden));
        QCOMPARE(findBox(a, "q_a_proj")->dtypes, std::string("F8_E4M3 + F32 scales"));

        // MoE: E experts of width moe_intermediate_size, the router's correction bias in F32.
        const AnatomyBox *router = findBox(a, "router");
        QVERIFY(router->detail.find(n(spec.experts) + " experts, top-" + std::to_string(spec.topk)) == 0);
        QVERIFY2(router->detail.find("correction bias F32") != std::string::npos, router->detail.c_str());
        QVERIFY(findBox(a, "routed experts")->detail.starts_with(n(spec.experts) + " experts × width " + n(spec.moeInter)));
        QVERIFY(findBox(a, "shared experts")->detail.starts_with("width " + n(spec.moeInter * spec.sharedExperts)));

        // The 576 cached values drawn as their two parts: the latent and the RoPE key every head shares.
        QVERIFY(findBox(a, "k_pe")->detail.starts_with("the last " + n(spec.ropeDim) + " of kv_a_proj_with_mqa's " +
                                                       n(spec.kvLoraRank + spec.ropeDim)));

        // Decode: kv_b_proj absorbed, its K half into the query, its V half after attention; the queries
        // read the cached latent as one shared head. Every tensor is still in exactly one block.
        const LayerAnatomy d = layerAnatomy(l, layer, nullptr, AnatomyMode::Decode);
        QVERIFY(d.unplaced.empty());
        checkEveryTensorAccountedFor(l, d);
        QVERIFY(!findBox(d, "key and value heads"));
        QCOMPARE(findBox(d, "kv_b_proj, K half (W_UK)")->tensors, findBox(a, "kv_b_proj")->tensors);
        QCOMPARE(findBox(d, "kv_b_proj, V half (W_UV)")->detail,
                 n(spec.kvLoraRank) + " latent → " + n(spec.vDim) + " per head");
        QVERIFY(findBox(d, "cached latent + RoPE key")->detail.starts_with(n(spec.kvLoraRank + spec.ropeDim) +
                                                                            " values per token"));
    }

    void theLayerIndexChangesNothing()
    {
        // The view reads one layer through tensorsByLayer (built off the GUI thread): the same diagram.
        const synth::LayoutSpec spec = synth::smallLayout();
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        const LoadedCheckpoint l = load(dir.path());
        const TensorsByLayer index = tensorsByLayer(l);
        QCOMPARE(index.size(), std::size_t(l.analysis.layerCount));
        for (int i = 0; i < l.analysis.layerCount; ++i) {
            const LayerAnatomy a = layerAnatomy(l, i), b = layerAnatomy(l, i, &index);
            QCOMPARE(b.heading, a.heading);
            QCOMPARE(b.unplaced, a.unplaced);
            QCOMPARE(b.stages.size(), a.stages.size());
            for (std::size_t s = 0; s < a.stages.size(); ++s) {
                QCOMPARE(b.stages[s].columns.size(), a.stages[s].columns.size());
                for (std::size_t c = 0; c < a.stages[s].columns.size(); ++c)
                    for (std::size_t k = 0; k < a.stages[s].columns[c].boxes.size(); ++k) {
                        QCOMPARE(b.stages[s].columns[c].boxes[k].detail, a.stages[s].columns[c].boxes[k].detail);
                        QCOMPARE(b.stages[s].columns[c].boxes[k].tensors, a.stages[s].columns[c].boxes[k].tensors);
                    }
            }
        }
    }

    void indexShareInTheStackAndTheLayer()
    {
        synth::LayoutSpec spec = synth::smallLayout();
        spec.indexer = synth::IndexerPolicy::IndexerTypes;
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        const LoadedCheckpoint l = load(dir.path());
        int full = -1, shared = -1;
        for (std::int64_t i = 0; i < spec.layers; ++i)
            (synth::formulaFull(i, spec.indexFreq, spec.indexOffset) ? full : shared) = static_cast<int>(i);
        QVERIFY(full >= 0 && shared >= 0);
        const LayerAnatomy f = layerAnatomy(l, full);
        QCOMPARE(findBox(f, "wk")->detail, n(spec.hidden) + " → " + n(spec.indexHeadDim) + " (from the hidden state)");
        QCOMPARE(findBox(f, "top-k selection")->detail, n(spec.indexHeads) + " index heads × " + n(spec.indexHeadDim) +
                                                            ", keeps " + n(spec.indexTopk) + " tokens");
        QVERIFY(findBox(f, "index keys (cached)")->cached);
        const LayerAnatomy s = layerAnatomy(l, shared);
        QVERIFY(!findBox(s, "wk"));
        const int reused = l.analysis.layers[static_cast<std::size_t>(shared)].reusesLayer;
        QVERIFY(reused >= 0 && synth::formulaFull(reused, spec.indexFreq, spec.indexOffset));
        QVERIFY2(findBox(s, "IndexShare")->detail.find("reuses layer " + std::to_string(reused)) == 0,
                 findBox(s, "IndexShare")->detail.c_str());
        // The shared layer draws the indexer blocks it skips, greyed, the cache they save, and the
        // selection coming in from the layer it reuses.
        QCOMPARE(findBox(s, "IndexShare")->from, "layer " + std::to_string(reused) + "'s top-k");
        QVERIFY(findBox(s, "wk, k_norm (not run)")->skipped);
        const AnatomyBox *saved = findBox(s, "index keys (not cached)");
        QVERIFY(saved->skipped && !saved->cached);
        QCOMPARE(saved->detail, "saves " + n(std::uint64_t(l.cache.indexEntryBytes)) + " B/token of cache");
        // The full layer's scores take three inputs: index queries, index keys and head weights.
        std::vector<std::string> inputs;
        for (const auto &stage : f.stages)
            if (stage.title.starts_with("DSA indexer"))
                for (const auto &c : stage.columns)
                    inputs.push_back(c.title);
        QCOMPARE(inputs, (std::vector<std::string>{"index queries", "index keys", "head weights"}));


        // The stack: dense layers, then MoE layers in one run (roles per layer inside), then MTP.
        const auto runs = layerStack(l);
        QCOMPARE(runs.front().kind, LayerKind::Dense);
        QCOMPARE(runs.front().count(), int(spec.firstDense));
        QCOMPARE(runs[1].kind, LayerKind::Moe);
        QCOMPARE(runs[1].count(), int(spec.layers - spec.firstDense));
        QCOMPARE(runs[1].attention, std::vector<LayerAttention>(std::size_t(spec.layers - spec.firstDense), LayerAttention::Mla));
        QCOMPARE(runs.back().kind, LayerKind::Mtp);
        int fullInRun = 0;
        for (auto r : runs[1].indexer)
            fullInRun += r == IndexerRole::Full;
        int expectFull = 0;
        for (std::int64_t i = spec.firstDense; i < spec.layers; ++i)
            expectFull += synth::formulaFull(i, spec.indexFreq, spec.indexOffset);
        QCOMPARE(fullInRun, expectFull);
    }

    void deepseekV32EveryLayerIndexed()
    {
        synth::LayoutSpec spec = synth::deepseekV32();
        spec.layers = 5;
        spec.firstDense = 1;
        spec.experts = 16;
        spec.nGroup = 4;
        spec.topkGroup = 2;
        spec.topk = 4;
        spec.shards = 2;
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        const LoadedCheckpoint l = load(dir.path());
        for (int i = 0; i < spec.layers; ++i) {
            const LayerAnatomy a = layerAnatomy(l, i);
            QVERIFY2(findBox(a, "wq_b"), a.heading.c_str());
            QVERIFY(!findBox(a, "IndexShare"));
            QVERIFY(a.unplaced.empty());
        }
        const LayerAnatomy moe = layerAnatomy(l, 2);
        QVERIFY2(findBox(moe, "router")->detail.find("4 groups keep 2") != std::string::npos,
                 findBox(moe, "router")->detail.c_str());
        QCOMPARE(findBox(moe, "wq_b")->detail, n(spec.qLoraRank) + " → " + n(spec.indexHeads * spec.indexHeadDim) +
                                                   " (from the query latent)");
    }

    // The layer as a data graph, its edges held against the engines' code, not the page's order.
    void mlaAndIndexerAsAGraph()
    {
        const synth::LayoutSpec spec = synth::smallLayout();
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        const LoadedCheckpoint l = load(dir.path());
        int owner = -1, shared = -1;
        for (const auto &info : l.analysis.layers) {
            if (info.indexer == IndexerRole::Full && info.indexerWeights && info.kind == LayerKind::Moe && owner < 0)
                owner = info.index;
            if (info.indexer == IndexerRole::Shared && shared < 0) shared = info.index;
        }
        QVERIFY(owner >= 0 && shared >= 0);
        const AnatomyGraph g = anatomyGraph(l, owner);
        QCOMPARE(g.kind, std::string("multi_latent_attention"));
        using V = std::vector<std::string>;
        // vLLM deepseek_v2.py DeepseekV2MLAAttention.forward: split, norm the latent, rotate k_pe, cache both.
        QCOMPARE(g.inputsOf("q_a_proj"), V{"hidden_in"});
        QCOMPARE(g.inputsOf("kv_a_proj_with_mqa"), V{"hidden_in"});
        QCOMPARE(g.inputsOf("kv_a_layernorm"), V{"kv_a_proj_with_mqa"});
        QCOMPARE(g.inputsOf("normalised_latent_cached"), V{"kv_a_layernorm"});
        QCOMPARE(g.inputsOf("k_pe"), V{"kv_a_proj_with_mqa"});
        QCOMPARE(g.inputsOf("rotary_position_rope"), V{"k_pe"});
        QCOMPARE(g.inputsOf("rotated_k_pe_cached"), V{"rotary_position_rope"});
        QVERIFY(g.node("normalised_latent_cached")->cached && g.node("rotated_k_pe_cached")->cached);
        // Indexer.forward(hidden_states, qr): wq_b reads the query latent, wk and weights_proj the hidden state.
        QCOMPARE(g.inputsOf("wq_b"), V{"q_a_layernorm"});
        QCOMPARE(g.inputsOf("wk"), V{"hidden_in"});
        QCOMPARE(g.inputsOf("weights_proj"), V{"hidden_in"});
        QCOMPARE(g.inputsOf("top_k_selection"), (V{"index_query_heads", "index_keys_cached", "weights_proj"}));
        // The sparse attention reads the selected entries; q_b_proj reads the query latent, not the indexer.
        QCOMPARE(g.inputsOf("q_b_proj"), V{"q_a_layernorm"});
        QCOMPARE(g.inputsOf("kv_b_proj"), V{"normalised_latent_cached"});
        const V att = g.inputsOf("sparse_attention");
        QVERIFY(std::find(att.begin(), att.end(), "top_k_selection") != att.end());
        QVERIFY(std::find(att.begin(), att.end(), "rotated_k_pe_cached") != att.end());
        QCOMPARE(g.inputsOf("o_proj"), V{"sparse_attention"});
        QCOMPARE(g.inputsOf("routed_experts"), (V{"router", "residual"}));
        // Every edge joins two nodes; every tensor of the layer is in exactly one node.
        std::multiset<std::string> held;
        for (const auto &n : g.nodes)
            for (const auto &t : n.tensors)
                held.insert(t);
        for (const auto &e : g.edges)
            QVERIFY(g.node(e.from) && g.node(e.to));
        for (const auto &shard : l.checkpoint.shards)
            for (const auto &t : shard.tensors)
                if (l.analysis.layerOf(t.name) == owner && t.name.find("layernorm") == std::string::npos) {
                    if (t.name.find("input_layernorm") != std::string::npos) continue;
                    QVERIFY2(held.count(std::string(t.name)) <= 1, std::string(t.name).c_str());
                }
        // An MTP block (vLLM deepseek_mtp.py DeepSeekMultiTokenPredictorLayer.forward): enorm reads the
        // next token's embedding, hnorm the hidden state, eh_proj both; the block runs on eh_proj's output,
        // which is also its residual (mtp_block(..., residual=None)); SharedHead norms the output for the head.
        int mtp = -1;
        for (const auto &info : l.analysis.layers)
            if (info.kind == LayerKind::Mtp && mtp < 0) mtp = info.index;
        QVERIFY(mtp >= 0);
        const AnatomyGraph m = anatomyGraph(l, mtp);
        QCOMPARE(m.inputsOf("enorm"), V{"next_token_embedding"});
        QCOMPARE(m.node("next_token_embedding")->role, NodeRole::Input);
        QCOMPARE(m.inputsOf("hnorm"), V{"hidden_in"});
        QCOMPARE(m.inputsOf("eh_proj"), (V{"enorm", "hnorm"}));
        QCOMPARE(m.inputsOf("q_a_proj"), V{"eh_proj"});
        QCOMPARE(m.inputsOf("kv_a_proj_with_mqa"), V{"eh_proj"});
        QCOMPARE(m.inputsOf("residual"), (V{"eh_proj", "o_proj"}));
        QCOMPARE(m.inputsOf("shared_head_norm"), V{"hidden_out"});
        QCOMPARE(m.nodes.back().role, NodeRole::Output);
        QCOMPARE(m.inputsOf(m.nodes.back().id), V{"shared_head_norm"});
        QVERIFY2(layerAnatomy(l, mtp).unplaced.empty(), "every tensor of the MTP block has its box");
        {
            // The page lists no input the arrows between its stages already carry (eh_proj's output is
            // the block's input, the layer's output the head's).
            LayerAnatomy page = layerAnatomy(l, mtp);
            annotateInputs(page, m);
            QCOMPARE(findBox(page, "q_a_proj")->inputsElsewhere, V{});
            QCOMPARE(findBox(page, "kv_a_proj_with_mqa")->inputsElsewhere, V{});
            QCOMPARE(findBox(page, "shared_head.norm")->inputsElsewhere, V{});
        }

        // IndexShare: the shared layer's attention takes the owner's top-k, from outside the layer.
        const AnatomyGraph s = anatomyGraph(l, shared);
        const V share = s.inputsOf("indexshare");
        QCOMPARE(share.size(), std::size_t(1));
        QCOMPARE(s.node(share.front())->role, NodeRole::Input);
        QVERIFY(s.node(share.front())->label.find("top-k") != std::string::npos);
        const V sharedAtt = s.inputsOf("sparse_attention");
        QVERIFY(std::find(sharedAtt.begin(), sharedAtt.end(), "indexshare") != sharedAtt.end());
        // The drawing shows every edge its columns cannot: each box names what feeds it from elsewhere.
        LayerAnatomy drawn = layerAnatomy(l, owner);
        annotateInputs(drawn, g);
        QCOMPARE(findBox(drawn, "wq_b")->inputsElsewhere, V{"q_a_layernorm"});
        QCOMPARE(findBox(drawn, "q_b_proj")->inputsElsewhere, V{"q_a_layernorm"});
        QCOMPARE(findBox(drawn, "kv_b_proj")->inputsElsewhere, V{"normalised latent (cached)"});
        QVERIFY(findBox(drawn, "kv_a_layernorm")->fedFromAbove && findBox(drawn, "kv_a_layernorm")->inputsElsewhere.empty());
        // Decode: the query moved into the latent, the cached latent read as one head.
        const AnatomyGraph d = anatomyGraph(l, owner, AnatomyMode::Decode);
        QCOMPARE(d.inputsOf("cached_latent_rope_key"), (V{"normalised_latent_cached", "rotated_k_pe_cached"}));
        QCOMPARE(d.inputsOf("kv_b_proj_v_half_w_uv"), V{"sparse_attention_in_latent_space"});
        // DOT and Mermaid carry every node and every edge.
        const std::string dot = anatomyDot(g), mermaid = anatomyMermaid(g);
        std::size_t dotEdges = 0, mermaidEdges = 0;
        for (std::size_t at = 0; (at = dot.find(" -> ", at)) != std::string::npos; ++at)
            ++dotEdges;
        for (std::size_t at = 0; (at = mermaid.find(" -->", at)) != std::string::npos; ++at)
            ++mermaidEdges;
        QCOMPARE(dotEdges, g.edges.size());
        QCOMPARE(mermaidEdges, g.edges.size());
        for (const auto &n : g.nodes)
            QVERIFY(dot.find("\"" + n.id + "\"") != std::string::npos && mermaid.find("  " + n.id) != std::string::npos);
        QCOMPARE(anatomyJson(g)["schema"].get<std::string>(), std::string("ckpt-atlas.anatomy/1"));
    }

    void gatedDeltaNetLayer()
    {
        // Qwen3-Next-shaped (vLLM models/qwen3_next.py Qwen3NextGatedDeltaNet): in_proj_qkvz → q, k, v, z;
        // in_proj_ba → b, a; conv1d + SiLU on q, k, v; beta and decay into the gated delta rule; z gates
        // norm(core, z) beside the state, never into it; out_proj.
        const std::uint64_t h = 256, nk = 2, nv = 4, dk = 32, dv = 32, K = 4;
        const nlohmann::json config = {{"num_hidden_layers", 2},       {"hidden_size", h},
                                       {"num_attention_heads", 4},     {"num_key_value_heads", 2},
                                       {"head_dim", 64},               {"linear_num_key_heads", nk},
                                       {"linear_num_value_heads", nv}, {"linear_key_head_dim", dk},
                                       {"linear_value_head_dim", dv},  {"linear_conv_kernel_dim", K},
                                       {"layer_types", {"linear_attention", "full_attention"}}};
        const std::uint64_t conv = 2 * nk * dk + nv * dv;
        std::vector<fixture::Tensor> t;
        const std::string p = "model.layers.0.linear_attn.";
        t.push_back({p + "in_proj_qkvz.weight", "BF16", {2 * nk * dk + 2 * nv * dv, h}});
        t.push_back({p + "in_proj_ba.weight", "BF16", {2 * nv, h}});
        t.push_back({p + "conv1d.weight", "BF16", {conv, 1, K}});
        t.push_back({p + "A_log", "F32", {nv}});
        t.push_back({p + "dt_bias", "BF16", {nv}});
        t.push_back({p + "norm.weight", "BF16", {dv}});
        t.push_back({p + "out_proj.weight", "BF16", {h, nv * dv}});
        for (const char *w : {"q_proj", "k_proj", "v_proj"})
            t.push_back({std::string("model.layers.1.self_attn.") + w + ".weight", "BF16", {64 * 2, h}});
        t.push_back({"model.layers.1.self_attn.o_proj.weight", "BF16", {h, 64 * 4}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const LoadedCheckpoint l = load(dir.path());
        QCOMPARE(int(l.analysis.layers[0].mixer), int(MixerKind::GatedDeltaNet)); // sized by linear_* dims
        QCOMPARE(int(l.analysis.layers[1].mixer), int(MixerKind::Full));
        const LayerAnatomy a = layerAnatomy(l, 0);
        QVERIFY2(a.unplaced.empty(), a.unplaced.empty() ? "" : a.unplaced.front().c_str());
        const AnatomyStage *gdn = nullptr;
        for (const auto &stage : a.stages)
            if (stage.title.starts_with("Gated DeltaNet")) gdn = &stage;
        QVERIFY(gdn);
        QCOMPARE(gdn->columns.size(), std::size_t(2));
        QCOMPARE(gdn->columns[0].boxes.front().title, std::string("in_proj_qkvz"));
        QCOMPARE(gdn->columns[1].boxes.front().title, std::string("in_proj_ba"));
        QCOMPARE(gdn->join.size(), std::size_t(3));
        QVERIFY(gdn->join[0].cached);                                    // the state
        QVERIFY(gdn->join[1].title.starts_with("norm(core, z)"));       // gated by z from beside
        QVERIFY(gdn->join[1].from.find("z") != std::string::npos);
        QCOMPARE(gdn->join[2].title, std::string("out_proj"));
    }

    void gqaLayer()
    {
        // Qwen3-MoE-shaped: q/k/v/o with q_norm and k_norm, 2 KV heads of 64, sliding window on every layer.
        const std::uint64_t h = 256, heads = 8, kv = 2, hd = 64, experts = 4, inter = 32;
        const nlohmann::json config = {{"num_hidden_layers", 2},  {"hidden_size", h},      {"num_attention_heads", heads},
                                       {"num_key_value_heads", kv}, {"head_dim", hd},       {"num_experts", experts},
                                       {"num_experts_per_tok", 2}, {"sliding_window", 128}};
        std::vector<fixture::Tensor> t;
        for (int l = 0; l < 2; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            t.push_back({p + "self_attn.q_proj.weight", "BF16", {heads * hd, h}});
            t.push_back({p + "self_attn.k_proj.weight", "BF16", {kv * hd, h}});
            t.push_back({p + "self_attn.v_proj.weight", "BF16", {kv * hd, h}});
            t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, heads * hd}});
            t.push_back({p + "self_attn.q_norm.weight", "BF16", {hd}});
            t.push_back({p + "self_attn.k_norm.weight", "BF16", {hd}});
            t.push_back({p + "mlp.gate.weight", "BF16", {experts, h}});
            for (std::uint64_t e = 0; e < experts; ++e)
                for (const char *w : {"gate_proj", "up_proj"})
                    t.push_back({p + "mlp.experts." + std::to_string(e) + "." + w + ".weight", "BF16", {inter, h}});
            for (std::uint64_t e = 0; e < experts; ++e)
                t.push_back({p + "mlp.experts." + std::to_string(e) + ".down_proj.weight", "BF16", {h, inter}});
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
            t.push_back({p + "mystery.weight", "BF16", {3}});
        }
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const LoadedCheckpoint l = load(dir.path());
        const LayerAnatomy a = layerAnatomy(l, 1);
        checkEveryTensorAccountedFor(l, a);
        QCOMPARE(a.stages.front().title, std::string("GQA attention, sliding window"));
        QCOMPARE(findBox(a, "q_proj")->detail, n(h) + " → " + n(heads * hd));
        QCOMPARE(findBox(a, "query heads")->detail, n(heads) + " × " + n(hd));
        QCOMPARE(findBox(a, "K heads (cached)")->detail, n(kv) + " × " + n(hd));
        QCOMPARE(findBox(a, "K heads (cached)")->cacheNote, n(2 * kv * hd * 2) + " B/token for K and V (bf16)");
        QCOMPARE(findBox(a, "attention")->detail, std::string("over the last 128 tokens"));
        QVERIFY(findBox(a, "q_norm") && findBox(a, "k_norm"));
        QVERIFY(findBox(a, "routed experts")->detail.starts_with("4 experts × width " + n(inter)));
        // What no box stands for is said, never dropped.
        QCOMPARE(a.unplaced, std::vector<std::string>{"model.layers.1.mystery.weight"});
        const auto runs = layerStack(l);
        QCOMPARE(runs.size(), std::size_t(1));
        QCOMPARE(runs.front().attention, std::vector<LayerAttention>(2, LayerAttention::Sliding));
    }
};

QTEST_GUILESS_MAIN(TestAnatomy)
#include "tst_anatomy.moc"
