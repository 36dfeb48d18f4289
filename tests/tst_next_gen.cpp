// The checkpoints engineers open in 2026 (domain.md section 12), written at full scale by synth/ and
// read back. Every expected figure is worked out here from the config's numbers (never from the
// program's output), then held against the published anchors.
#include "analysis.h"
#include "anatomy.h"
#include "anatomy_graph.h"
#include "byte_source.h"
#include "cache_budget.h"
#include "capacity_plan.h"
#include "checkpoint_reader.h"
#include "diff.h"
#include "cli_run.h"
#include "explain.h"
#include "synthetic_layout.h"

#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>

using namespace atlas;
using cli::figuresRender;
using cli::inspectJson;
using cli::planJson;
using json = nlohmann::json;

namespace {

struct Opened
{
    Checkpoint ckpt;
    CheckpointAnalysis a;
};

Opened writeAndOpen(const synth::WrittenLayout &layout, const QString &dir)
{
    synth::writeLayout(layout, dir.toStdString());
    LocalDirectorySource source(dir.toStdString());
    Opened o;
    o.ckpt = readCheckpoint(source);
    o.a = analyze(o.ckpt);
    return o;
}

std::uint64_t category(const CheckpointAnalysis &a, Category c)
{
    return a.budget.byCategory[static_cast<std::size_t>(c)];
}

std::uint64_t tensorCount(const Checkpoint &c)
{
    std::uint64_t n = 0;
    for (const auto &s : c.shards)
        n += s.tensors.size();
    return n;
}

std::uint64_t tensorBytes(const Checkpoint &c)
{
    std::uint64_t n = 0;
    for (const auto &s : c.shards)
        for (const auto &t : s.tensors)
            n += t.bytes();
    return n;
}

// The message of a failed "no tensor without a role" check (QVERIFY2 evaluates it either way).
const char *firstUnassigned(const CheckpointAnalysis &a)
{
    return a.budget.otherTensors.empty() ? "" : a.budget.otherTensors.front().c_str();
}

std::string formatOf(const CheckpointAnalysis &a, Category c)
{
    for (const auto &row : a.quantLayout)
        if (row.category == c) return row.format;
    return {};
}

// DeepSeek-V4's parameters by the reference model.py's shapes (FP4 experts counted unpacked, scales and
// tid2eid apart), for one config.
struct V4Numbers
{
    std::uint64_t D, L, H, Rq, G, E, I;
    std::vector<int> ratios; // per layer, then the MTP block
    static constexpr std::uint64_t V = 129280, hd = 512, K = 6;

    std::uint64_t block(int ratio, bool hash) const
    {
        std::uint64_t n = 2 * D + H;                                  // attn_norm, ffn_norm, attn_sink
        n += Rq * D + Rq + H * hd * Rq + hd * D + hd;                 // wq_a, q_norm, wq_b, wkv, kv_norm
        n += 1024 * G * (H * hd / G) + D * G * 1024;                  // grouped output projection
        n += E * D + (hash ? 0 : E);                                  // gate (+ its bias)
        n += E * 3 * I * D + 3 * I * D;                               // routed and shared experts
        n += 2 * (24 * 4 * D + 24 + 3);                               // hc_attn_*, hc_ffn_*
        if (ratio == 128) n += 128 * hd + 2 * hd * D + hd;            // compressor
        if (ratio == 4)
            n += 4 * 2 * hd + 2 * 2 * hd * D + hd                     // overlapping compressor
                 + 64 * 128 * Rq + 64 * D                            // indexer wq_b, weights_proj
                 + 4 * 256 + 2 * 256 * D + 128;                      // the indexer's compressor
        return n;
    }
    std::uint64_t withoutMtp() const
    {
        std::uint64_t n = 2 * V * D + D + (4 * 4 * D + 4 + 1); // embed, head, norm, hc_head_*
        for (std::uint64_t i = 0; i < L; ++i)
            n += block(ratios[i], i < 3);
        return n;
    }
    std::uint64_t mtp() const { return block(ratios[L], false) + 2 * D * D + 3 * D + (4 * 4 * D + 5); }
    std::uint64_t routedMain() const { return L * E * 3 * I * D; }
    std::uint64_t active() const
    {
        const auto routed = static_cast<unsigned __int128>(routedMain());
        return withoutMtp() - routedMain() + static_cast<std::uint64_t>((routed * K + E / 2) / E);
    }
};

V4Numbers flashNumbers()
{
    V4Numbers n{4096, 43, 64, 1024, 8, 256, 2048, {0, 0}};
    for (int i = 2; i < 43; ++i)
        n.ratios.push_back(i % 2 == 0 ? 4 : 128);
    n.ratios.push_back(0);
    return n;
}

V4Numbers proNumbers()
{
    V4Numbers n{7168, 61, 128, 1536, 16, 384, 3072, {128, 128}};
    for (int i = 2; i < 61; ++i)
        n.ratios.push_back(i % 2 == 0 ? 4 : 128);
    n.ratios.push_back(0);
    return n;
}

} // namespace

class TestNextGen : public QObject
{
    Q_OBJECT

private:
    void deepseekV4(const synth::WrittenLayout &layout, const V4Numbers &n, double publishedTotal,
                    double publishedActive, std::uint64_t publishedTensors)
    {
        QTemporaryDir dir;
        const Opened o = writeAndOpen(layout, dir.path());
        const CheckpointAnalysis &a = o.a;
        if (publishedTensors) QCOMPARE(tensorCount(o.ckpt), publishedTensors);

        // Every tensor has a role, the sum is the config's arithmetic, the MTP block is a layer after the others.
        QVERIFY2(a.budget.otherTensors.empty(), firstUnassigned(a));
        QCOMPARE(a.mainLayers, int(n.L));
        QCOMPARE(a.layerCount, int(n.L) + 1);
        QCOMPARE(a.budget.total, n.withoutMtp() + n.mtp());
        QCOMPARE(category(a, Category::Mtp), n.mtp());
        QCOMPARE(category(a, Category::RoutedExperts), n.routedMain());
        QCOMPARE(*a.budget.activatedPerToken, n.active());
        QCOMPARE(a.layers.back().routedExperts, int(n.E));
        // The published sizes leave the MTP block out; the published active count leaves the input
        // embedding out (this program counts it, as domain.md section 5 says GLM and DeepSeek-V3 publish it).
        QCOMPARE(std::round(double(n.withoutMtp()) / 1e9 / publishedTotal * 10) / 10, 1.0);
        QCOMPARE(std::round((double(n.active()) - double(V4Numbers::V * n.D)) / 1e9), publishedActive);
        // tid2eid is neither parameters nor scales: three hash layers of [vocab, top-k].
        QCOMPARE(a.budget.routerTables.tensors, std::uint64_t(3));
        QCOMPARE(a.budget.routerTables.elements, 3 * V4Numbers::V * V4Numbers::K);
        QVERIFY(formatOf(a, Category::RoutedExperts).starts_with("FP4 e2m1 g32"));
        QVERIFY(formatOf(a, Category::Attention).find("FP8 e4m3 128x128 ue8m0") != std::string::npos);

        // The schedule: compress_ratios per layer, hash routing on the first three, indexers on ratio 4 only.
        QCOMPARE(a.scheduleSource, std::string("compress_ratios"));
        QVERIFY(a.scheduleMismatches.empty());
        QVERIFY(a.indexShare.mismatches.empty());
        std::vector<int> ratio4;
        for (std::uint64_t i = 0; i < n.L; ++i) {
            const LayerInfo &l = a.layers[i];
            QCOMPARE(l.compressRatio, std::int64_t(n.ratios[i]));
            QCOMPARE(l.attention, std::string(n.ratios[i] == 0   ? "sliding_attention"
                                              : n.ratios[i] == 4 ? "compressed_sparse_attention"
                                                                 : "heavily_compressed_attention"));
            QCOMPARE(l.hashRouted, i < 3);
            QCOMPARE(l.indexer, n.ratios[i] == 4 ? IndexerRole::Full : IndexerRole::None);
            if (n.ratios[i] == 4) ratio4.push_back(int(i));
        }
        QCOMPARE(a.indexShare.full, ratio4);

        // The cache (domain.md section 13): the reference BF16 rows, then vLLM's FP8 layout.
        std::uint64_t r4 = 0, r128 = 0, r0 = 0;
        for (std::uint64_t i = 0; i < n.L; ++i)
            (n.ratios[i] == 4 ? r4 : n.ratios[i] == 128 ? r128 : r0) += 1;
        CacheOptions opt;
        opt.contextTokens = 1 << 20;
        CacheBudget c = computeCacheBudget(o.ckpt, a, opt);
        QVERIFY2(c.available, c.reason.c_str());
        const std::uint64_t window = 128 * 512 * 2; // 128 BF16 rows of the 512-dim K=V head
        QCOMPARE(window, std::uint64_t(131072));
        QCOMPARE(c.bytesPerToken, r4 * (512 * 2 + 128 * 2) / 4 + r128 * 512 * 2 / 128);
        const std::uint64_t comp4 = 2 * 8 * 1024 * 4 + 2 * 8 * 256 * 4, comp128 = 2 * 128 * 512 * 4; // FP32
        QCOMPARE(*c.fixedStateBytes, n.L * window + r4 * comp4 + r128 * comp128);
        QCOMPARE(c.totalBytes, r4 * 1280 * (opt.contextTokens.value() / 4) +
                                   r128 * 1024 * (opt.contextTokens.value() / 128) + *c.fixedStateBytes);
        opt.preset = CachePreset::Vllm;
        c = computeCacheBudget(o.ckpt, a, opt);
        QCOMPARE(c.bytesPerTokenExact, double(r4) * (584 + 132) / 4 + double(r128) * 584 / 128);
        opt.preset = CachePreset::Reference;
        opt.stateDtype = StateDtype::BF16;
        c = computeCacheBudget(o.ckpt, a, opt);
        QCOMPARE(*c.fixedStateBytes, n.L * window + r4 * comp4 / 2 + r128 * comp128 / 2);

        const LoadedCheckpoint data{o.ckpt, a, computeCacheBudget(o.ckpt, a, CacheOptions{})};
        // One count everywhere: a tensor's parameters (Layers, IndexShare) add up to the budget, the
        // tid2eid tables counting none; a checkpoint's stored size in Compare is every tensor byte.
        {
            std::uint64_t sum = 0;
            for (const auto &s : o.ckpt.shards)
                for (const auto &t : s.tensors)
                    sum += a.parametersOf(t);
            QCOMPARE(sum, a.budget.total);
            QVERIFY(a.budget.routerTables.tensors > 0);
            QCOMPARE(diffCheckpoints(data, data).aStoredBytes(), o.ckpt.tensorBytes());
        }
        // The plan at TP 8 by vLLM's deepseek_v4 rules, by name: the query and K=V latent paths, norms,
        // compressors, indexers, gates (bias, tid2eid) and hyper-connections whole on every rank; the
        // attention sink padded to max(heads / 8, 64) FP32 values per rank; everything else split by 8.
        {
            std::uint64_t replicated = 0, split = 0, sinks = 0;
            for (const auto &sh : o.ckpt.shards)
                for (const auto &t : sh.tensors) {
                    if (t.name.starts_with("mtp.")) continue;
                    const bool whole = t.name.find(".wq_a.") != std::string::npos ||
                                       t.name.find(".wkv.") != std::string::npos ||
                                       t.name.find("norm") != std::string::npos ||
                                       t.name.find(".compressor.") != std::string::npos ||
                                       t.name.find(".indexer.") != std::string::npos ||
                                       t.name.find(".gate.") != std::string::npos || t.name.find("hc_") != std::string::npos;
                    if (t.name.ends_with("attn_sink"))
                        sinks += std::max<std::uint64_t>(t.numel / 8, 64) * 4;
                    else
                        (whole ? replicated : split) += t.bytes();
                }
            QCOMPARE(split % 8, std::uint64_t(0));
            PlanOptions po;
            po.gpus = 8;
            po.gpuMemory = *gpuMemoryFromName("B200");
            const CapacityPlan p = planCapacity(data, po);
            QCOMPARE(p.perGpu.replicatedBytes, replicated);
            QCOMPARE(p.perGpu.weightBytes, replicated + split / 8 + sinks);
            QCOMPARE(sinks, n.L * 64 * 4);
        }

        // Routing: sqrtsoftplus, the gate.bias is a correction bias, the hash layers are skipped with why.
        QByteArray err;
        const auto report = inspectJson(dir.path(), {QStringLiteral("--simulate"), QStringLiteral("--tokens"),
                                                     QStringLiteral("256")}, &err);
        QVERIFY2(report.is_object(), err.constData());
        QCOMPARE(report["parameters"]["unassigned"]["tensors"].get<int>(), 0);
        QCOMPARE(report["parameters"]["total_without_mtp"].get<std::uint64_t>(), n.withoutMtp());
        QCOMPARE(report["biases"]["kind"].get<std::string>(), std::string("correction"));
        QCOMPARE(report["biases"]["tensors"].get<std::uint64_t>(), n.L - 3 + 1);
        QCOMPARE(report["routing"]["router"]["scoring"].get<std::string>(), std::string("sqrtsoftplus"));
        QCOMPARE(report["routing"]["layers"].size(), std::size_t(n.L - 3 + 1));
        QCOMPARE(report["routing"]["skipped"].size(), std::size_t(3));
        for (const auto &s : report["routing"]["skipped"])
            QVERIFY(s.get<std::string>().find("hash-routed") != std::string::npos);
        QCOMPARE(report["layers"][0]["routing"].get<std::string>(), std::string("hash"));
        for (std::size_t i = 0; i < n.ratios.size() && i < report["layers"].size(); ++i)
            QCOMPARE(report["layers"][i]["mixer"].get<std::string>(),
                     std::string(n.ratios[i] == 0   ? "window_attention"
                                 : n.ratios[i] == 4 ? "compressed_sparse_attention"
                                                    : "heavily_compressed_attention"));
        QCOMPARE(report["layers"][3]["routing"].get<std::string>(), std::string("scores"));
        QVERIFY2(figuresRender(dir.path(), &err), err.constData());

        // Anatomy: a ratio-4 layer draws window, compressor and indexer; a ratio-128 layer no indexer;
        // every tensor of the layer has its block.
        const auto r4Layer = std::find(n.ratios.begin(), n.ratios.end(), 4) - n.ratios.begin();
        const auto r128Layer = std::find(n.ratios.begin(), n.ratios.end(), 128) - n.ratios.begin();
        for (const auto layer : {r4Layer, r128Layer}) {
            const LayerAnatomy la = layerAnatomy(data, int(layer));
            QVERIFY2(la.unplaced.empty(), la.unplaced.empty() ? "" : la.unplaced.front().c_str());
            QCOMPARE(la.stages.front().title, std::string("Hyper-connections around the attention (mHC)"));
            std::vector<std::string> columns;
            for (const auto &c : la.stages[1].columns)
                columns.push_back(c.title);
            std::vector<std::string> want{"query", "key = value", "compressor"};
            if (layer == r4Layer) want.push_back("indexer");
            QCOMPARE(columns, want);
        }
        // A hash layer's router: tid2eid chooses, the gate's scores still weigh (the reference
        // Gate.forward computes sqrtsoftplus(x·W) on every layer and gathers the chosen experts' scores);
        // the table is a token→expert table, not quantisation scales.
        const LayerAnatomy hashLayer = layerAnatomy(data, 0);
        bool sawRouter = false;
        for (const auto &stage : hashLayer.stages)
            for (const auto &column : stage.columns)
                for (const auto &b : column.boxes)
                    if (b.kind == BoxKind::Router) {
                        sawRouter = true;
                        QVERIFY2(b.detail.find("tid2eid[token id] chooses the experts") != std::string::npos &&
                                     b.detail.find("scores weigh them") != std::string::npos,
                                 b.detail.c_str());
                        QVERIFY2(b.dtypes.find("token→expert table") != std::string::npos &&
                                     b.dtypes.find("I64 scales") == std::string::npos,
                                 b.dtypes.c_str());
                    }
        QVERIFY(sawRouter);
        // As a graph (the reference Attention.forward calls self.indexer(x, qr, ...)): the indexer's wq_b
        // reads the query latent, weights_proj and its compressor the hidden state, and the top-k that
        // picks compressed rows feeds the attention beside the window.
        {
            const AnatomyGraph g4 = anatomyGraph(data, int(r4Layer));
            using V = std::vector<std::string>;
            QCOMPARE(g4.inputsOf("wq_b_2"), V{"q_norm"});
            QCOMPARE(g4.inputsOf("weights_proj"), g4.inputsOf("wq_a"));
            QCOMPARE(g4.inputsOf("index_compressor"), g4.inputsOf("wq_a"));
            QCOMPARE(g4.inputsOf("top_k_selection"), (V{"wq_b_2", "index_compressor", "weights_proj"}));
            const V att = g4.inputsOf("attention");
            QVERIFY(std::find(att.begin(), att.end(), "top_k_selection") != att.end());
            QVERIFY(std::find(att.begin(), att.end(), "window_cached_per_sequence") != att.end());
            // Hyper-connections as the reference Block.forward runs them: hc_pre(x, hc_attn_fn, ...) mixes
            // the streams into the attention's input (wq_a and wkv read it), hc_post(x, residual, post,
            // comb) writes the attention's output back into the streams, hc_pre(hc_ffn_*) feeds the MoE,
            // and its hc_post is the layer's output.
            QCOMPARE(g4.inputsOf("hc_attn"), V{"hidden_in"});
            QCOMPARE(g4.inputsOf("wq_a"), V{"hc_attn"});
            QCOMPARE(g4.inputsOf("wkv"), V{"hc_attn"});
            QCOMPARE(g4.inputsOf("residual"), (V{"wo_a_wo_b", "hidden_in", "hc_attn"}));
            QCOMPARE(g4.inputsOf("hc_ffn"), V{"residual"});
            QCOMPARE(g4.inputsOf("router"), V{"hc_ffn"});
            QCOMPARE(g4.inputsOf("shared_experts"), V{"hc_ffn"});
            QCOMPARE(g4.inputsOf("hc_post_ffn"), (V{"weighted_sum", "residual", "hc_ffn"}));
            QCOMPARE(g4.inputsOf("hidden_out"), V{"hc_post_ffn"});
            QCOMPARE(g4.node("hc_attn")->tensors.size(), std::size_t(3)); // hc_attn_fn, _base, _scale
        }
        // The MTP block (the reference MTPBlock.forward): e_proj(enorm(e)) + h_proj(hnorm(h)) into the
        // streams, the block, then hc_head mixes the streams into one for norm and the shared head.
        {
            int mtp = -1;
            for (const auto &info : data.analysis.layers)
                if (info.kind == LayerKind::Mtp && mtp < 0) mtp = info.index;
            QVERIFY(mtp >= 0);
            using V = std::vector<std::string>;
            const AnatomyGraph gm = anatomyGraph(data, mtp);
            QCOMPARE(gm.inputsOf("enorm"), V{"next_token_embedding"});
            QCOMPARE(gm.inputsOf("e_proj"), V{"enorm"});
            QCOMPARE(gm.inputsOf("h_proj"), V{"hnorm"});
            QCOMPARE(gm.inputsOf("sum"), (V{"e_proj", "h_proj"}));
            QCOMPARE(gm.inputsOf("hc_attn"), V{"sum"});
            QCOMPARE(gm.inputsOf("residual"), (V{"wo_a_wo_b", "sum", "hc_attn"}));
            QCOMPARE(gm.inputsOf("hc_head"), V{"hidden_out"});
            QCOMPARE(gm.inputsOf("norm"), V{"hc_head"});
            QVERIFY2(layerAnatomy(data, mtp).unplaced.empty(), "every tensor of the MTP block has its box");
        }
        const auto runs = layerStack(data);
        QCOMPARE(runs.front().attention.front(), LayerAttention::Compressed);
        QCOMPARE(runs.front().compression[std::size_t(r4Layer)], std::int64_t(4));
    }

    // Every working the report and the plan carry evaluates exactly to the number at its path, and the
    // headline paths each have one.
    static void workingsHold(const json &doc, const std::vector<std::string> &required)
    {
        QVERIFY(doc.contains("explain"));
        for (const auto &[path, w] : doc["explain"].items()) {
            const json *node = &doc;
            for (std::size_t at = 0, dot; at != std::string::npos; at = dot == std::string::npos ? dot : dot + 1) {
                dot = path.find('.', at);
                node = &(*node)[path.substr(at, dot == std::string::npos ? std::string::npos : dot - at)];
            }
            const std::string expression = w["expression"].get<std::string>();
            const auto value = evaluateWorking(expression);
            QVERIFY2(value, (path + " = " + expression).c_str());
            const double got = double(value->numerator) / double(value->denominator);
            QVERIFY2(node->is_number(), path.c_str());
            if (node->is_number_unsigned())
                QVERIFY2(value->denominator == 1 && std::uint64_t(value->numerator) == node->get<std::uint64_t>(),
                         (path + " = " + expression).c_str());
            else
                QVERIFY2(got == node->get<double>(), (path + " = " + expression).c_str());
            QVERIFY(!w["terms"].empty());
        }
        for (const auto &path : required)
            QVERIFY2(doc["explain"].contains(path), path.c_str());
    }

private slots:
    void everyHeadlineHasItsWorking()
    {
        for (const char *name : {"small", "kimi-linear", "glm-5.3-flash", "deepseek-v4-flash"}) {
            QTemporaryDir dir;
            const auto layout = synth::layoutNamed(name);
            QVERIFY(layout);
            synth::writeLayout(*layout, dir.path().toStdString());
            QByteArray err;
            const json report = inspectJson(dir.path(), {}, &err);
            QVERIFY2(report.is_object(), err.constData());
            std::vector<std::string> required{"parameters.total", "parameters.activated_per_token",
                                              "cache.bytes_per_token", "cache.total_bytes"};
            if (!report["cache"]["fixed_state_bytes"].is_null()) required.push_back("cache.fixed_state_bytes");
            workingsHold(report, required);
            const json plan = planJson(dir.path(), {QStringLiteral("--gpus"), QStringLiteral("4"), QStringLiteral("--gpu"),
                                                     QStringLiteral("H200"), QStringLiteral("--context"), QStringLiteral("131072")},
                                       &err);
            QVERIFY2(plan.is_object(), err.constData());
            std::vector<std::string> planRequired{"per_gpu.weight_bytes"};
            if (plan["per_gpu"]["cache_bytes_per_token"].is_number_unsigned() && plan["fits"].get<bool>())
                planRequired.push_back("per_gpu.max_cached_tokens");
            workingsHold(plan, planRequired);
            QProcess text;
            text.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("plan"), dir.path(), QStringLiteral("--gpus"),
                                                        QStringLiteral("4"), QStringLiteral("--gpu"), QStringLiteral("H200"),
                                                        QStringLiteral("--explain")});
            QVERIFY(text.waitForFinished(120000));
            const std::string printed = text.readAllStandardOutput().toStdString();
            QVERIFY2(printed.find("per_gpu.weight_bytes = " +
                                  plan["explain"]["per_gpu.weight_bytes"]["expression"].get<std::string>()) == 0,
                     printed.c_str());
        }
        // The working a teacher points at (domain.md section 17): the small layout's latent and index keys.
        QTemporaryDir dir;
        synth::writeLayout(*synth::layoutNamed("small"), dir.path().toStdString());
        QByteArray err;
        const json report = inspectJson(dir.path(), {}, &err);
        const std::string e = report["explain"]["cache.bytes_per_token"]["expression"].get<std::string>();
        QVERIFY2(e.find("*(" + std::to_string(synth::smallLayout().kvLoraRank) + "+" +
                        std::to_string(synth::smallLayout().ropeDim) + ")*2") != std::string::npos,
                 e.c_str());
    }

    void deepseekV4Flash()
    {
        // Published: 284 B total, 13 B active; the index lists 69,187 tensors.
        deepseekV4(synth::deepseekV4Flash(), flashNumbers(), 284, 13, 69187);
    }

    void deepseekV4Pro()
    {
        // Published: 1.6 T total, 49 B active. Its cache in BF16: 30 ratio-4 layers x 320 B and 31
        // ratio-128 layers x 8 B per token; 61 windows of 131,072 B per sequence.
        const V4Numbers n = proNumbers();
        QCOMPARE(30 * 320 + 31 * 8, 9848);
        deepseekV4(synth::deepseekV4Pro(), n, 1600, 49, 0);
    }

    void glm53Flash()
    {
        QTemporaryDir dir;
        const Opened o = writeAndOpen(synth::glm53Flash(), dir.path());
        const CheckpointAnalysis &a = o.a;
        constexpr std::uint64_t H = 4096, V = 154880, P = 64 * 128, E = 288;
        const std::uint64_t common = 2 * H + 2 * (24 * 4 * H + 24 + 3);
        const std::uint64_t kda = 3 * P * H + 3 * P * 4 + 64 + P + 2 * 128 * H + 2 * P * 128 + 64 * H + 128 + H * P;
        const std::uint64_t dsa = 1536 * H + 1536 + 64 * 256 * 1536 + 512 * H + 512 + 64 * 512 * 512 +
                                  H * 64 * 256 + 4096 * 1536 + 128 * H + 2 * 128 + 32 * H + 128 * H + 4 * 128;
        const std::uint64_t dense = 3 * 12288 * H, moe = E * H + E + 3 * 2048 * H + E * 3 * 2048 * H;
        // enorm, hnorm, eh_proj [H, 2H], shared_head.norm, the two layer norms; DSA attention; MoE.
        const std::uint64_t mtp = 2 * H + 2 * H * H + H + 2 * H + dsa + moe;
        const std::uint64_t vision = 1024 * 3 * 2 * 14 * 14 + 1024 +
                                     24 * (2 * 1024 + 3072 * 1024 + 3072 + 1024 * 1024 + 1024 + 2 * 64 +
                                           2 * (4096 * 1024 + 4096) + 1024 * 4096 + 1024) +
                                     1024 + 4096 * 1024 * 4 + 4096 + 4096 * 4096 + 2 * 4096 + 3 * 10240 * 4096;
        const std::uint64_t total = 2 * V * H + H + 45 * common + 34 * kda + 11 * dsa + 3 * dense + 42 * moe + mtp + vision;
        // The published BF16 checkpoint's headers hold 321,323,031,390 elements; FP8 stores the same
        // parameters in 328,326,771,576 bytes.
        QCOMPARE(total, std::uint64_t(321'323'031'390));
        QCOMPARE(a.budget.total, total);
        QCOMPARE(tensorBytes(o.ckpt), std::uint64_t(328'326'771'576));
        QVERIFY2(a.budget.otherTensors.empty(), firstUnassigned(a));
        QCOMPARE(category(a, Category::Encoders), vision);
        QCOMPARE(a.budget.activeByCategory[static_cast<std::size_t>(Category::Encoders)], std::uint64_t(0));
        QCOMPARE(category(a, Category::LinearAttention), 34 * kda);
        QCOMPARE(category(a, Category::HyperConnections), 45 * 2 * (24 * 4 * H + 24 + 3));
        QCOMPARE(category(a, Category::Mtp), mtp);
        int linear = 0, sparse = 0;
        std::vector<int> dsaLayers;
        for (int i = 0; i < a.mainLayers; ++i) {
            const auto &kind = a.layers[std::size_t(i)].attention;
            linear += kind == "linear_attention";
            if (kind == "deepseek_sparse_attention") {
                ++sparse;
                dsaLayers.push_back(i);
            }
        }
        QCOMPARE(linear, 34);
        QCOMPARE(sparse, 11);
        QCOMPARE(a.indexShare.full, dsaLayers); // indexer_types says full on all 45
        QVERIFY(a.indexShare.mismatches.empty());
        QVERIFY(a.scheduleMismatches.empty());
        // The cache: 11 DSA layers of 512 latent values without RoPE (1,024 B in BF16); index keys pooled
        // per 4 tokens (132 B entries in vLLM) with a tail of 8 BF16 keys; 34 KDA layers of
        // 3 x 64 x 128 x 3 BF16 convolution values and a 64 x 128 x 128 FP32 recurrent state.
        CacheOptions opt;
        opt.preset = CachePreset::Vllm;
        opt.contextTokens = 4096;
        const CacheBudget c = computeCacheBudget(o.ckpt, a, opt);
        QVERIFY2(c.available, c.reason.c_str());
        const std::uint64_t kdaState = 3 * 64 * 128 * 3 * 2 + 64 * 128 * 128 * 4;
        QCOMPARE(kdaState, std::uint64_t(147456 + 4194304));
        QCOMPARE(c.bytesPerToken, 11 * 1024 + 11 * 132 / 4);
        QCOMPARE(*c.fixedStateBytes, 34 * kdaState + 11 * (2 * 4 * 128 * 2));
        QCOMPARE(c.totalBytes, 11 * 1024 * 4096 + 11 * 132 * (4096 / 4) + *c.fixedStateBytes);
        QByteArray err;
        const auto report = inspectJson(dir.path(), {QStringLiteral("--biases")}, &err);
        QVERIFY2(report.is_object(), err.constData());
        QCOMPARE(report["biases"]["tensors"].get<int>(), 43); // 42 MoE layers and the MTP block
        QVERIFY2(figuresRender(dir.path(), &err), err.constData());

        // Anatomy: a KDA layer (convolutions, gates, a state per sequence), a DSA layer without RoPE whose
        // index keys are pooled.
        LoadedCheckpoint data{o.ckpt, a, c};
        const LayerAnatomy kdaLayer = layerAnatomy(data, 4);
        QVERIFY(kdaLayer.unplaced.empty());
        QCOMPARE(kdaLayer.stages[1].title, std::string("Kimi Delta Attention (linear, recurrent state)"));
        QVERIFY(kdaLayer.stages[1].join.front().cached);
        QVERIFY(kdaLayer.stages[1].join.front().cacheNote.starts_with("4,341,760 B per sequence"));
        const LayerAnatomy dsaLayer = layerAnatomy(data, 3);
        QVERIFY(dsaLayer.unplaced.empty());
        bool pooled = false, noRope = false;
        for (const auto &stage : dsaLayer.stages) // the latents, then the indexer, then attention
            for (const auto &col : stage.columns)
                for (const auto &b : col.boxes) {
                    pooled = pooled || b.title == "key pooling";
                    noRope = noRope || (b.cached && b.detail.find("no RoPE key") != std::string::npos);
                }
        QVERIFY(pooled);
        QVERIFY(noRope);
    }

    void kimiLinear()
    {
        QTemporaryDir dir;
        const Opened o = writeAndOpen(synth::kimiLinear48B(), dir.path());
        const CheckpointAnalysis &a = o.a;
        constexpr std::uint64_t H = 2304, V = 163840, P = 4096, E = 256, I = 1024;
        const std::uint64_t kda = 3 * P * H + 3 * P * 4 + 32 + P + 2 * 128 * H + 2 * P * 128 + 32 * H + 128 + H * P;
        const std::uint64_t mla = 32 * 192 * H + 576 * H + 512 + 32 * 256 * 512 + H * 32 * 128;
        const std::uint64_t moe = E * H + E + (E + 1) * 3 * I * H;
        const std::uint64_t total = 2 * V * H + H + 27 * 2 * H + 20 * kda + 7 * mla + 3 * 9216 * H + 26 * moe;
        // Published: 20,493 tensors and 49,122,681,728 elements (98,245,528,576 bytes: A_log and dt_bias are F32).
        QCOMPARE(total, std::uint64_t(49'122'681'728));
        QCOMPARE(tensorCount(o.ckpt), std::uint64_t(20'493));
        QCOMPARE(tensorBytes(o.ckpt), std::uint64_t(98'245'528'576));
        QCOMPARE(a.budget.total, total);
        QVERIFY2(a.budget.otherTensors.empty(), firstUnassigned(a));
        QCOMPARE(category(a, Category::LinearAttention), 20 * kda);
        // linear_attn_config counts from 1: the MLA layers are 4, 8, ..., 24, 27, i.e. 3, 7, ..., 23, 26.
        QCOMPARE(a.scheduleSource, std::string("linear_attn_config"));
        QVERIFY(a.scheduleMismatches.empty());
        const CacheBudget c = computeCacheBudget(o.ckpt, a, CacheOptions{});
        QCOMPARE(c.bytesPerToken, 7 * (512 + 64) * 2); // the 7 MLA layers keep latent and RoPE key
        QCOMPARE(*c.fixedStateBytes, 20 * (3 * 32 * 128 * 3 * 2 + 32 * 128 * 128 * 4));
        for (int i = 0; i < 27; ++i) {
            const bool mla = (i + 1) % 4 == 0 || i == 26;
            QCOMPARE(a.layers[std::size_t(i)].attention, std::string(mla ? "full_attention" : "linear_attention"));
            // The kind decided once: the schedule's full layers are MLA by their tensors, the rest KDA
            // (linear_attn_config sizes them).
            QCOMPARE(int(a.layers[std::size_t(i)].mixer), int(mla ? MixerKind::Mla : MixerKind::Kda));
        }

        // A BF16-stored correction bias: rounding to BF16 cannot change a level, nor a routing.
        QByteArray err;
        const auto report = inspectJson(dir.path(), {QStringLiteral("--simulate"), QStringLiteral("--tokens"),
                                                     QStringLiteral("512")}, &err);
        QVERIFY2(report.is_object(), err.constData());
        QCOMPARE(report["biases"]["kind"].get<std::string>(), std::string("correction"));
        QCOMPARE(report["biases"]["tensors"].get<int>(), 26);
        QCOMPARE(report["biases"]["summary"]["layers_losing_levels"].get<int>(), 0);
        for (const auto &l : report["biases"]["layers"]) {
            QCOMPARE(l["dtype"].get<std::string>(), std::string("BF16"));
            QCOMPARE(l["fp32_distinct"].get<int>(), l["bf16_distinct"].get<int>());
        }
        QCOMPARE(report["routing"]["router"]["scoring"].get<std::string>(), std::string("sigmoid"));
        QCOMPARE(report["routing"]["layers"].size(), std::size_t(26));
        for (const auto &l : report["routing"]["layers"])
            QCOMPARE(l["changed_set_fraction"]["bias_bf16"].get<double>(), 0.0);
        QVERIFY2(figuresRender(dir.path(), &err), err.constData());

        // The plan at TP 4 by vLLM's kimi_linear / kda rules: norms, the MLA kv_a path, the gates' first
        // halves (f_a_proj, g_a_proj), routers and biases whole; the rest split by heads or width.
        const std::uint64_t wholeElements = H + 27 * 2 * H + 20 * (2 * 128 * H + 128) + 7 * (576 * H + 512) + 26 * (E * H + E);
        const std::uint64_t whole = 2 * wholeElements; // all BF16
        const std::uint64_t rest = tensorBytes(o.ckpt) - whole;
        QCOMPARE(rest % 4, std::uint64_t(0));
        const LoadedCheckpoint data{o.ckpt, a, c};
        PlanOptions po;
        po.gpus = 4;
        po.gpuMemory = *gpuMemoryFromName("H100");
        const CapacityPlan p = planCapacity(data, po);
        QCOMPARE(p.perGpu.replicatedBytes, whole);
        QCOMPARE(p.perGpu.weightBytes, whole + rest / 4);
        // The KDA state splits by heads, the MLA latent does not.
        QCOMPARE(p.perGpu.cacheBytesPerToken, double(7 * (512 + 64) * 2));
        QCOMPARE(p.perGpu.stateBytesPerSequence, *c.fixedStateBytes / 4);

        // Anatomy of an MLA layer with mla_use_nope: the 64 values are cached but never rotated (no RoPE
        // node). Of a KDA layer (vLLM layers/kda.py KimiDeltaAttention.forward): q, k, v through conv1d
        // and SiLU (q, k L2-normalised), decay and beta beside them, all into the delta-rule state; the
        // output gate g_a → g_b gates o_norm(core, g) and is no input of the state.
        const LayerAnatomy mlaLayer = layerAnatomy(data, 3);
        QVERIFY(mlaLayer.unplaced.empty());
        bool rotated = false, cachedAsIs = false;
        for (const auto &stage : mlaLayer.stages)
            for (const auto &col : stage.columns)
                for (const auto &b : col.boxes) {
                    rotated = rotated || b.title.find("rotary") != std::string::npos;
                    cachedAsIs = cachedAsIs || b.title == "k_pe (cached as is)";
                }
        QVERIFY(!rotated);
        QVERIFY(cachedAsIs);
        const LayerAnatomy kdaLayer = layerAnatomy(data, 0);
        QVERIFY(kdaLayer.unplaced.empty());
        const AnatomyStage *kdaStage = nullptr;
        for (const auto &stage : kdaLayer.stages)
            if (stage.title.starts_with("Kimi Delta Attention")) kdaStage = &stage;
        QVERIFY(kdaStage);
        std::vector<std::string> columns;
        for (const auto &col : kdaStage->columns)
            columns.push_back(col.title);
        QCOMPARE(columns, (std::vector<std::string>{"q", "k", "v", "decay", "beta"}));
        QCOMPARE(kdaStage->columns[0].boxes.back().title, std::string("SiLU, L2 norm"));
        QCOMPARE(kdaStage->columns[2].boxes.back().title, std::string("SiLU"));
        const auto holds = [](const AnatomyBox &b, const std::string &part) {
            return std::any_of(b.tensors.begin(), b.tensors.end(),
                               [&](const std::string &t) { return t.find(part) != std::string::npos; });
        };
        QVERIFY(kdaStage->join.size() == 3 && kdaStage->join[0].cached); // the state, then o_norm, then o_proj
        QVERIFY(!holds(kdaStage->join[0], "g_a_proj") && !holds(kdaStage->join[0], "g_b_proj"));
        QVERIFY(holds(kdaStage->join[1], "o_norm") && holds(kdaStage->join[1], "g_a_proj") && holds(kdaStage->join[1], "g_b_proj"));
        QVERIFY2(kdaStage->join[1].from.find("g_a → g_b") != std::string::npos, kdaStage->join[1].from.c_str());
        for (const auto &col : kdaStage->columns)
            for (const auto &b : col.boxes)
                QVERIFY2(!holds(b, "g_a_proj") && !holds(b, "g_b_proj"), b.title.c_str());
        // The same as a graph: the state reads q, k, v (after conv and SiLU), the decay and beta; o_norm
        // reads the state and the hidden state (its gate g_a → g_b); no node of g feeds the state.
        const AnatomyGraph kg = anatomyGraph(data, 0);
        const auto stateInputs = kg.inputsOf("delta_rule_the_recurrent_state_kept_per_sequence");
        QCOMPARE(stateInputs.size(), std::size_t(5));
        for (const auto &in : stateInputs) {
            const AnatomyNode *n = kg.node(in);
            QVERIFY(n);
            QVERIFY2(std::none_of(n->tensors.begin(), n->tensors.end(),
                                  [](const std::string &t) { return t.find("g_a_proj") != std::string::npos; }),
                     in.c_str());
        }
        QCOMPARE(kg.inputsOf("o_norm_core_g_gated_rmsnorm"),
                 (std::vector<std::string>{"delta_rule_the_recurrent_state_kept_per_sequence", "hidden_in"}));
        // The command line prints the same graph as ckpt-atlas.anatomy/1, and refuses a layer it lacks.
        QProcess cli;
        cli.start(QStringLiteral(CKPT_ATLAS_BIN),
                  {QStringLiteral("anatomy"), dir.path(), QStringLiteral("--layer"), QStringLiteral("0"), QStringLiteral("--json")});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        const json graph = json::parse(cli.readAllStandardOutput().toStdString());
        QCOMPARE(graph["schema"].get<std::string>(), std::string("ckpt-atlas.anatomy/1"));
        QCOMPARE(graph["kind"].get<std::string>(), std::string("kimi_delta_attention"));
        QCOMPARE(graph["edges"].size(), kg.edges.size());
        cli.start(QStringLiteral(CKPT_ATLAS_BIN),
                  {QStringLiteral("anatomy"), dir.path(), QStringLiteral("--layer"), QStringLiteral("999")});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 2);
    }
};

QTEST_GUILESS_MAIN(TestNextGen)
#include "tst_next_gen.moc"
